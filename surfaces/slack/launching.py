"""Starting the Slack surface (slack-bolt, async) for ``acp-relay run``, and checking its tokens.

``launch`` checks the bot token with ``auth.test``, builds the Bolt app and its listeners, attaches
the surface to the host and starts receiving: in Socket Mode over a websocket the app opens itself
(``socket``), in HTTP mode on 127.0.0.1:``http_port`` at ``/slack/events`` (``http``). ``doctor``
asks Slack whether the tokens work (``auth.test``, ``apps.connections.open``) for ``acp-relay doctor``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from core.surface_api import Host, StartupError, secret
from surfaces.slack.errors import AUTH_ERRORS, SDK_FAILURES, error_code
from surfaces.slack.files import SlackFiles
from surfaces.slack.http import HttpReceiver
from surfaces.slack.listeners import Listeners
from surfaces.slack.options import Timings, Tokens, read_tokens
from surfaces.slack.settings import SlackConfig
from surfaces.slack.socket import SocketReceiver
from surfaces.slack.surface import SlackSurface
from surfaces.slack.threads import Threads

__all__ = ["WEB_CONNECTIONS", "SlackRelay", "SlackSurface", "Timings", "doctor", "launch", "web_client"]

log = logging.getLogger("acp_relay.slack")

_DEFAULT_API = "https://slack.com/api/"
DOCTOR_TIMEOUT_S = 10.0


class _UnusedTokenWarning(logging.Filter):
    """Bolt warns that $SLACK_BOT_TOKEN goes unused when it is given a client: the relay's client
    already holds the token the config names, so the warning would only mislead an operator."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


logging.getLogger("acp_relay.slack.bolt").addFilter(_UnusedTokenWarning())


def _library_logger(name: str) -> logging.Logger:
    """The logger ``name`` for slack-sdk or slack-bolt, its own level set to the one in effect now.

    Both libraries ask a logger's own level (``logger.level``), not the one in effect, whether to
    format a debug line, and a named logger's own level is NOTSET (0): so every Web API call formatted
    its request and Slack's answer (headers, the text itself) into a debug line no handler kept
    (3-5% of a call's CPU against the fake). With debug logging on at start their lines still show."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.NOTSET)  # a relay started earlier in this process may have set it
    logger.setLevel(logger.getEffectiveLevel())
    return logger


#: Web API calls out at once. aiohttp's default pool holds 100 connections and hands one on only when
#: the event loop gets round to the answer that frees it: in a burst of 1,000 conversations the loop is
#: busy, so 896 of the 1,000 first texts queued there, for 2-4 s each (an aiohttp trace of the relay;
#: first text p95 8.1 s against 2.7 s with no cap). A burst of 1,000 has at most about 500 calls out
#: at once; 512 also stays well inside the usual limit of 1,024 open files.
WEB_CONNECTIONS = 512


def web_client(settings: SlackConfig, token: str, session: aiohttp.ClientSession | None = None) -> AsyncWebClient:
    """The Web API client: a 429 is retried once by slack-sdk after its ``Retry-After``; a second one
    reaches the core, which holds the chat and sends again."""
    return AsyncWebClient(token=token, base_url=settings.api_base_url or _DEFAULT_API, session=session,
                          logger=_library_logger("acp_relay.slack.sdk"),
                          retry_handlers=[AsyncConnectionErrorRetryHandler(),
                                          AsyncRateLimitErrorRetryHandler(max_retry_count=1)])


class SlackRelay:
    """A running Slack surface (what ``launch`` returns)."""

    def __init__(self, surface: SlackSurface, session: aiohttp.ClientSession, listeners: Listeners, *,
                 socket: SocketReceiver | None = None, http: HttpReceiver | None = None) -> None:
        self.surface = surface
        self.listeners = listeners
        self.socket = socket
        self.http = http
        self._session = session

    async def stop_receiving(self) -> None:
        """No more events: the socket closes, or the HTTP server stops."""
        if self.socket is not None:
            await self.socket.stop()
        if self.http is not None:
            await self.http.stop()

    async def fatal(self) -> StartupError:
        """Returns when Slack refuses a token for good (the app token, or the bot token mid-run)."""
        waiters = [asyncio.ensure_future(asyncio.shield(self.surface.revoked))]
        if self.socket is not None:
            waiters.append(asyncio.ensure_future(self.socket.fatal()))
        try:
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        return done.pop().result()

    async def close(self) -> None:
        """Stop receiving (if not yet), and close the Web API connections."""
        await self.stop_receiving()
        await self._session.close()


async def _identity(client: AsyncWebClient, settings: SlackConfig) -> str:
    """``auth.test`` once at start: a token Slack refuses is a configuration fact (exit 2). Returns
    the app's member id ("" when Slack could not say)."""
    try:
        info = await client.auth_test()
    except SlackApiError as exc:
        code = error_code(exc)
        if code in AUTH_ERRORS:
            raise StartupError(f"Slack refused the bot token in ${settings.bot_token_env} ({code}); check "
                               "surfaces.slack.bot_token_env") from None
        log.warning("slack: auth.test failed (%s); continuing, Bolt asks again on the first event", code)
    except SDK_FAILURES as exc:
        log.warning("slack: Slack could not be reached at start (%s); continuing", type(exc).__name__)
    else:
        log.info("slack: signed in as %s in %s", info.get("user"), info.get("team"))
        return str(info.get("user_id") or "")
    return ""


async def launch(host: Host, settings: SlackConfig, *, timings: Timings | None = None) -> SlackRelay:
    """Start the Slack surface for ``host``; ``StartupError`` for a missing or refused token."""
    timings = timings or Timings()
    tokens: Tokens = read_tokens(settings)
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=WEB_CONNECTIONS))
    try:
        client = web_client(settings, tokens.bot, session)
        bot_user_id = await _identity(client, settings)
        surface = SlackSurface(client, timings=timings, token_env=settings.bot_token_env, state=host.state,
                               bot_user=bot_user_id)
        surface.posting.prune()  # marks of threads quiet for a day: nothing is taken up there any more
        # process_before_response: Slack is acknowledged when a listener returns, i.e. once the message
        # is journaled (see ``listeners``), never before.
        app = AsyncApp(client=client, signing_secret=tokens.signing_secret or "unused-in-socket-mode",
                       request_verification_enabled=False, process_before_response=True,
                       logger=_library_logger("acp_relay.slack.bolt"))
        host.attach(surface, settings.allowed_user_ids)
        threads = Threads(host.state)
        threads.prune()  # threads quiet for months: a reply there needs a mention again
        files = SlackFiles(client, session, tokens.bot, settings.api_base_url or _DEFAULT_API)
        listeners = Listeners(host, surface, threads, files, bot_user_id=bot_user_id,
                              held_retry_s=timings.held_retry_s)
        listeners.register(app)
        if settings.mode == "socket":
            assert tokens.app is not None  # read_tokens checked it
            socket = SocketReceiver(host, app, client, tokens.app, timings=timings, token_env=settings.app_token_env,
                                    direct=listeners.on_event)
            socket.start()
            return SlackRelay(surface, session, listeners, socket=socket)
        assert tokens.signing_secret is not None
        http = HttpReceiver(app, tokens.signing_secret, settings.http_port)
        await http.start()
        return SlackRelay(surface, session, listeners, http=http)
    except BaseException:
        await session.close()
        raise


async def doctor(settings: SlackConfig) -> list[tuple[bool, str]]:
    """``acp-relay doctor``: are the tokens there, and does Slack take them (``auth.test``, and
    ``apps.connections.open`` in Socket Mode)? Lines name the variables, never the tokens."""
    envs = [settings.bot_token_env, settings.app_token_env if settings.mode == "socket"
            else settings.signing_secret_env]
    lines = [(False, f"${env} MISSING") for env in envs if secret(env) is None]
    if lines:
        return lines
    try:
        tokens = read_tokens(settings)
    except StartupError as exc:
        return [(False, str(exc))]
    async with aiohttp.ClientSession() as session:
        client = web_client(settings, tokens.bot, session)
        lines.append(await _probe(settings.bot_token_env, "auth.test", client.auth_test()))
        if tokens.app is not None and settings.mode == "socket":
            lines.append(await _probe(settings.app_token_env, "apps.connections.open",
                                      client.apps_connections_open(app_token=tokens.app)))
        else:
            lines.append((True, f"${settings.signing_secret_env} present (Slack checks it on each request)"))
    return lines


async def _probe(env: str, method: str, call: Awaitable[Any]) -> tuple[bool, str]:
    try:
        async with asyncio.timeout(DOCTOR_TIMEOUT_S):
            info = await call
    except SlackApiError as exc:
        return False, f"${env} present, but Slack refused it ({method}: {error_code(exc) or exc.response.status_code})"
    except (*SDK_FAILURES, TimeoutError) as exc:
        return False, f"${env} present; Slack did not answer {method} ({type(exc).__name__})"
    if method == "auth.test":
        return True, f"${env} present; {method}: bot {info.get('user')} in {info.get('team')}"
    return True, f"${env} present; {method}: accepted"
