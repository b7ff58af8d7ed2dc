"""The Telegram surface (python-telegram-bot): ``launch`` starts it for ``acp-relay run``.

A private chat is one conversation, and so is each topic of a forum group; in groups the bot
answers when mentioned or replied to. Replies stream as drafts in private chats and as a message
edited in place elsewhere. Updates arrive by long polling (the default) or a webhook; either way
none is confirmed to Telegram before the engine has journaled it. See the modules: ``surface``
(the core's calls), ``inbound`` (updates in), ``render`` (Markdown out), ``polling``, ``webhook``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from telegram import Bot
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from core.config import RelayConfig, TelegramConfig, secret
from core.engine.surface import StartupError
from core.redact import redact
from surfaces.telegram.intake import Intake
from surfaces.telegram.polling import Sleep
from surfaces.telegram.running import TelegramRelay, build_application
from surfaces.telegram.surface import TelegramSurface
from surfaces.telegram.webhook import check_secret
from surfaces.telegram.wording import missing_secret, missing_token, missing_webhook_url, unreadable_answer

if TYPE_CHECKING:
    from core.engine.engine import Engine

__all__ = ["TelegramRelay", "TelegramSurface", "check", "doctor", "launch"]

# PTB 22 hands out ``retry_after`` as a timedelta with this set, and warns on every read without it.
os.environ.setdefault("PTB_TIMEDELTA", "1")

#: ``doctor`` waits this long for getMe.
DOCTOR_TIMEOUT_S = 8.0
_KEY = "surfaces.telegram"


def _is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _problems(settings: TelegramConfig) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if secret(settings.token_env) is None:
        problems.append((f"{_KEY}.token_env", missing_token(settings.token_env)))
    if settings.api_base_url and not _is_http_url(settings.api_base_url):
        problems.append((f"{_KEY}.api_base_url", "must be the Bot API server's http:// or https:// root URL"))
    if settings.mode == "webhook":
        if not settings.webhook_url:
            problems.append((f"{_KEY}.webhook_url", missing_webhook_url()))
        elif not _is_http_url(settings.webhook_url):
            problems.append((f"{_KEY}.webhook_url", "must be the https:// address Telegram posts updates to"))
        value = secret(settings.webhook_secret_env)
        if value is None:
            problems.append((f"{_KEY}.webhook_secret_env", missing_secret(settings.webhook_secret_env)))
        else:
            try:
                check_secret(value, settings.webhook_secret_env)
            except StartupError as exc:
                problems.append((f"{_KEY}.webhook_secret_env", str(exc)))
    return problems


def check(config: RelayConfig) -> list[tuple[str, str]]:
    """Problems ``launch`` would refuse to start with, as (JSON path, sentence), for check-config."""
    return _problems(config.surfaces.telegram)


async def launch(engine: Engine, config: RelayConfig, *, sleep: Sleep = asyncio.sleep) -> TelegramRelay:
    """Start the Telegram surface and attach it to ``engine`` (``sleep``: the pauses between polls).

    Raises ``StartupError`` (the relay prints it as one line and exits 2) for a missing or refused
    token, a webhook without its address or secret, or a webhook address that cannot be served.
    """
    settings = config.surfaces.telegram
    problems = _problems(settings)
    if problems:
        raise StartupError(problems[0][1])
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request, URL and all
    token = secret(settings.token_env)
    assert token is not None
    app = build_application(token, settings)
    surface = TelegramSurface(app.bot)
    engine.attach(surface, settings.allowed_user_ids)
    intake = Intake(engine, app.bot, surface)
    webhook_secret = secret(settings.webhook_secret_env) if settings.mode == "webhook" else None
    relay = TelegramRelay(app, surface, intake, settings, engine.store, webhook_secret=webhook_secret, sleep=sleep)
    try:
        await relay.start()
    except StartupError:
        await relay.close()
        raise
    return relay


async def doctor(config: RelayConfig) -> list[tuple[bool, str]]:
    """``acp-relay doctor``: is the token there, and does Telegram take it (getMe, a short wait)?

    Lines name the environment variable and the bot's @username, never the token.
    """
    settings = config.surfaces.telegram
    env = settings.token_env
    token = secret(env)
    if token is None:
        return [(False, f"${env} MISSING")]
    root = (settings.api_base_url or "https://api.telegram.org").rstrip("/")
    request = HTTPXRequest(connect_timeout=DOCTOR_TIMEOUT_S / 2, read_timeout=DOCTOR_TIMEOUT_S / 2)
    bot = Bot(token, base_url=f"{root}/bot", base_file_url=f"{root}/file/bot", request=request)
    try:
        async with asyncio.timeout(DOCTOR_TIMEOUT_S), bot:
            username = bot.username
    except InvalidToken:
        return [(False, f"${env} present, but Telegram refused it (getMe: not a valid bot token)")]
    except (TelegramError, TimeoutError, OSError) as exc:
        reason = redact(str(exc)) or type(exc).__name__
        return [(False, f"${env} present; Telegram did not answer getMe ({reason})")]
    except Exception as exc:  # an answer PTB cannot read
        return [(False, f"${env} present; {unreadable_answer(root, 'getMe', type(exc).__name__)}")]
    return [(True, f"${env} present; getMe: @{username}")]
