"""The Slack surface's config model (``surfaces.slack``). No SDK here (check-config reads it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.surface_api import SurfaceSettings

__all__ = ["SlackConfig"]


class SlackConfig(SurfaceSettings):
    """Slack surface, Socket Mode or HTTP mode (127.0.0.1:``http_port``/slack/events).

    ``bot_token_env`` names the variable holding the bot token (``xoxb-``); ``app_token_env`` the
    app-level token (``xapp-``, Socket Mode); ``signing_secret_env`` the signing secret (HTTP mode).
    ``allowed_user_ids`` are Slack member ids (``U0123ABCD``); ``api_base_url`` is the Web API base
    in the ``https://slack.com/api/`` form.
    """

    mode: Literal["socket", "http"] = "socket"
    bot_token_env: str = "SLACK_BOT_TOKEN"
    app_token_env: str = "SLACK_APP_TOKEN"
    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    allowed_user_ids: list[str] = Field(default_factory=list)
    api_base_url: str | None = None
    http_port: int = Field(default=3000, ge=0, le=65535)
