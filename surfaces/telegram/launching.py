"""Starting the Telegram surface for ``acp-relay run`` (``launch``) and checking its token (``doctor``)."""

from __future__ import annotations

import asyncio
import logging

from telegram import Bot
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from core.surface_api import Host, StartupError, redact, secret
from surfaces.telegram.intake import Intake
from surfaces.telegram.polling import Sleep
from surfaces.telegram.running import TelegramRelay, build_application
from surfaces.telegram.settings import TelegramConfig, check
from surfaces.telegram.surface import TelegramSurface
from surfaces.telegram.wording import unreadable_answer

__all__ = ["TelegramRelay", "TelegramSurface", "doctor", "launch"]

#: ``doctor`` waits this long for getMe.
DOCTOR_TIMEOUT_S = 8.0


async def launch(host: Host, settings: TelegramConfig, *, sleep: Sleep = asyncio.sleep) -> TelegramRelay:
    """Start the Telegram surface for ``host`` (``sleep``: the pauses between polls, and before a message
    the store refused is offered to it again).

    Raises ``StartupError`` (the relay prints it as one line and exits 2) for a missing or refused
    token, a webhook without its address or secret, or a webhook address that cannot be served.
    """
    problems = check(settings)
    if problems:
        raise StartupError(problems[0][1])
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request, URL and all
    token = secret(settings.token_env)
    assert token is not None
    app = build_application(token, settings)
    surface = TelegramSurface(app.bot)
    host.attach(surface, settings.allowed_user_ids)
    intake = Intake(host, app.bot, surface, sleep=sleep)
    webhook_secret = secret(settings.webhook_secret_env) if settings.mode == "webhook" else None
    relay = TelegramRelay(app, surface, intake, settings, host, webhook_secret=webhook_secret, sleep=sleep)
    try:
        await relay.start()
    except StartupError:
        await relay.close()
        raise
    return relay


async def doctor(settings: TelegramConfig) -> list[tuple[bool, str]]:
    """``acp-relay doctor``: is the token there, and does Telegram take it (getMe, a short wait)?

    Lines name the environment variable and the bot's @username, never the token.
    """
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
