"""The Discord surface's config model (``surfaces.discord``) and what ``launch`` would refuse.

No SDK here: ``acp-relay check-config`` reads it where discord.py is not installed.
"""

from __future__ import annotations

from pydantic import Field

from core.surface_api import Problems, SurfaceSettings, secret
from surfaces.discord.wording import no_token_text

__all__ = ["DiscordConfig", "check", "endpoint_problems"]


class DiscordConfig(SurfaceSettings):
    """Discord surface; ``api_base_url`` is the REST base, ``gateway_url`` the gateway.

    ``guild_ids`` (beyond the contract): the servers to register the slash commands in, where they
    appear at once; empty registers them globally (Discord may take up to an hour to show them).
    """

    token_env: str = "DISCORD_BOT_TOKEN"
    allowed_user_ids: list[int] = Field(default_factory=list)
    allowed_channel_ids: list[int] = Field(default_factory=list)
    api_base_url: str | None = None
    gateway_url: str | None = None
    guild_ids: list[int] = Field(default_factory=list)


def endpoint_problems(settings: DiscordConfig) -> Problems:
    """An ``api_base_url`` or ``gateway_url`` that is not a URL of its kind."""
    problems: Problems = []
    if settings.api_base_url and not settings.api_base_url.startswith(("https://", "http://")):
        problems.append(("api_base_url", "must be an http(s) URL such as https://discord.com/api/v10"))
    if settings.gateway_url and not settings.gateway_url.startswith(("wss://", "ws://")):
        problems.append(("gateway_url", "must be a ws(s) URL such as wss://gateway.discord.gg"))
    return problems


def check(settings: DiscordConfig) -> Problems:
    """Problems ``launch`` would refuse to start with, as (path in the section, sentence)."""
    problems = endpoint_problems(settings)
    if secret(settings.token_env) is None:
        problems.append(("token_env", no_token_text(settings.token_env)))
    return problems
