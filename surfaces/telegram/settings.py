"""The Telegram surface's config model (``surfaces.telegram``) and what ``launch`` would refuse.

No SDK here: ``acp-relay check-config`` reads it where python-telegram-bot is not installed.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from core.surface_api import Problems, StartupError, SurfaceSettings, secret
from surfaces.telegram.wording import invalid_secret, missing_secret, missing_token, missing_webhook_url

__all__ = ["TelegramConfig", "check", "check_secret"]

#: Telegram's rule for ``secret_token``.
_RE_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")


class TelegramConfig(SurfaceSettings):
    """Telegram surface; ``api_base_url`` is the Bot API server root (``http://127.0.0.1:8081``).

    Beyond the contract's keys: ``mode`` is ``polling`` (long polling, ``poll_timeout_s`` seconds per
    ``getUpdates``) or ``webhook``: Telegram posts updates to ``webhook_url`` (the public HTTPS address
    a reverse proxy forwards to ``webhook_host``:``webhook_port``, at the URL's path), each carrying the
    secret from the environment variable ``webhook_secret_env`` in its
    ``X-Telegram-Bot-Api-Secret-Token`` header.
    """

    token_env: str = "TELEGRAM_BOT_TOKEN"
    allowed_user_ids: list[int] = Field(default_factory=list)
    api_base_url: str | None = None
    mode: Literal["polling", "webhook"] = "polling"
    poll_timeout_s: int = Field(default=30, ge=1, le=50)  # 0 would poll Telegram in a busy loop
    webhook_url: str | None = None
    webhook_host: str = "127.0.0.1"
    webhook_port: int = Field(default=8443, ge=0, le=65535)
    webhook_secret_env: str = "TELEGRAM_WEBHOOK_SECRET"


def check_secret(value: str, env: str) -> str:
    """``value`` if Telegram accepts it as a webhook secret, else ``StartupError``."""
    if not _RE_SECRET.fullmatch(value):
        raise StartupError(invalid_secret(env))
    return value


def _is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def check(settings: TelegramConfig) -> Problems:
    """Problems ``launch`` would refuse to start with, as (path in the section, sentence)."""
    problems: Problems = []
    if secret(settings.token_env) is None:
        problems.append(("token_env", missing_token(settings.token_env)))
    if settings.api_base_url and not _is_http_url(settings.api_base_url):
        problems.append(("api_base_url", "must be the Bot API server's http:// or https:// root URL"))
    if settings.mode == "webhook":
        if not settings.webhook_url:
            problems.append(("webhook_url", missing_webhook_url()))
        elif not _is_http_url(settings.webhook_url):
            problems.append(("webhook_url", "must be the https:// address Telegram posts updates to"))
        value = secret(settings.webhook_secret_env)
        if value is None:
            problems.append(("webhook_secret_env", missing_secret(settings.webhook_secret_env)))
        else:
            try:
                check_secret(value, settings.webhook_secret_env)
            except StartupError as exc:
                problems.append(("webhook_secret_env", str(exc)))
    return problems
