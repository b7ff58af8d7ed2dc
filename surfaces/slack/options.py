"""What the Slack surface is started with: its tokens (read from the environment variables the
config names), its timings, and the problems ``launch`` would refuse to start with."""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.surface_api import HELD_RETRY_S, Problems, RateLimit, StartupError, secret
from surfaces.slack.settings import SlackConfig

__all__ = ["SLACK_PACE", "Timings", "Tokens", "problems", "read_tokens"]

_PATH = "surfaces.slack"
_MEMBER_ID = re.compile(r"[UW][A-Z0-9]{2,}")
#: chat.postMessage takes about one message per second per channel, with short bursts.
SLACK_PACE = RateLimit(1, 1.0, burst=3)


@dataclass(frozen=True, slots=True)
class Timings:
    """Paces and intervals; the defaults are Slack's, tests make them small."""

    rate_limit: RateLimit | None = SLACK_PACE
    #: Slack ends a native stream after about five minutes: a new message starts before that.
    rollover_after_s: float = 240.0
    #: The assistant status clears itself after two minutes without a message.
    typing_refresh_s: float = 90.0
    #: Socket Mode pings (the SDK's); four unanswered intervals mean the socket is dead.
    ping_interval_s: float = 10.0
    connect_timeout_s: float = 30.0
    reconnect_first_delay_s: float = 1.0
    reconnect_max_delay_s: float = 60.0
    #: A message held after Slack's last delivery is offered to the store again this often (first, most).
    held_retry_s: tuple[float, float] = HELD_RETRY_S


@dataclass(frozen=True, slots=True)
class Tokens:
    """The secrets, read once at start (never logged)."""

    bot: str
    app: str | None
    signing_secret: str | None


def problems(settings: SlackConfig) -> Problems:
    """What would stop the surface from starting, as (path in the section, sentence)."""
    found: Problems = []
    needed = [("bot_token_env", settings.bot_token_env, "the bot token, xoxb-…", "xoxb-")]
    if settings.mode == "socket":
        needed.append(("app_token_env", settings.app_token_env, "the app-level token, xapp-…", "xapp-"))
    else:
        needed.append(("signing_secret_env", settings.signing_secret_env, "the app's signing secret", ""))
    for key, env, what, prefix in needed:
        value = secret(env)
        if value is None:
            found.append((key, f"${env} is not set (it must hold {what})"))
        elif prefix and value.startswith(("xoxb-", "xapp-", "xoxp-")) and not value.startswith(prefix):
            found.append((key, f"${env} holds a {value[:5]} token, but it must hold {what}"))
    for i, user in enumerate(settings.allowed_user_ids):
        if not _MEMBER_ID.fullmatch(user):
            found.append((f"allowed_user_ids[{i}]", f"{user!r} is not a Slack member id (like U0123ABCD: "
                          "a profile's ⋮ menu, Copy member ID)"))
    url = settings.api_base_url
    if url is not None and not url.startswith(("https://", "http://")):
        found.append(("api_base_url", "must be the Web API base URL, like https://slack.com/api/"))
    return found


def read_tokens(settings: SlackConfig) -> Tokens:
    """The tokens ``settings`` names; ``StartupError`` names the first problem."""
    if found := problems(settings):
        path, sentence = found[0]
        raise StartupError(f"{_PATH}.{path}: {sentence}")
    bot = secret(settings.bot_token_env)
    assert bot is not None  # problems() checked it
    return Tokens(bot, secret(settings.app_token_env), secret(settings.signing_secret_env))
