"""Socket Mode: slack-sdk's aiohttp client, supervised by the core's ``Receiver``.

The SDK pings the socket every ``ping_interval_s`` and notices when no pong came back for four
intervals (a socket that is open but receives nothing); it also follows Slack's ``disconnect``
message (``refresh_requested``) to a new connection by itself. Its own reconnect loop is switched
off, because it retries a failed connection forever with the same URL and logs a traceback each
time: here, a connection that closed or went quiet ends ``connect_once``, and the ``Receiver``
opens a new one after a capped, growing delay, with one log line per failure. An app-level token
Slack refuses ends receiving for good (``StartupError``): ``acp-relay run`` then exits 2 saying so.

Messages and mentions are handed to the listeners directly (``direct``, with the envelope's
``retry_attempt``), acknowledged once they return and not when they raise (Slack then sends the event
again), as Bolt does; every other envelope goes through Bolt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from core.surface_api import Host, StartupError, StoreError
from surfaces.slack.errors import AUTH_ERRORS, error_code
from surfaces.slack.options import Timings

__all__ = ["ConnectionLost", "SocketReceiver"]

log = logging.getLogger("acp_relay.slack.socket")

#: Slack's answers to apps.connections.open that no reconnect can fix.
_TOKEN_REFUSED = AUTH_ERRORS | {"not_allowed_token_type", "invalid_app_token"}


#: Takes a Socket Mode event payload itself (True), or leaves it to Bolt (False); with Slack's count of
#: the deliveries before this one.
Direct = Callable[[dict[str, Any], int], Awaitable[bool]]


class ConnectionLost(Exception):
    """The Socket Mode connection closed, or stopped answering pings."""


class _Handler(AsyncSocketModeHandler):
    """Bolt's handler; an event ``direct`` takes (True) is acknowledged once it returns, without Bolt."""

    def __init__(self, app: AsyncApp, *, direct: Direct, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._direct = direct

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        if req.type == "events_api" and isinstance(req.payload, dict):
            try:
                taken = await self._direct(req.payload, req.retry_attempt or 0)
            except StoreError as exc:  # a full disk, the database away: a fault the relay expects
                log.warning("a Slack event could not be stored; Slack sends it again: %s", exc)
                return
            except Exception:  # as Bolt does with a failing listener: logged, and not acknowledged
                log.exception("a Slack event could not be taken; Slack sends it again")
                return
            if taken:
                await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
                return
        await super().handle(client, req)


async def _nothing_direct(_payload: dict[str, Any], _retry: int) -> bool:
    return False


class SocketReceiver:
    """One Socket Mode connection at a time for ``app``, replaced whenever it fails."""

    def __init__(self, host: Host, app: AsyncApp, client: AsyncWebClient, app_token: str, *, timings: Timings,
                 token_env: str, direct: Direct = _nothing_direct) -> None:
        """``direct`` takes an event payload without Bolt (True), or leaves it to Bolt (False)."""
        self.handler = _Handler(app, direct=direct, app_token=app_token, web_client=client,
                                ping_interval=timings.ping_interval_s, logger=logging.getLogger("acp_relay.slack.sdk"))
        sdk = self.handler.client
        sdk.default_auto_reconnect_enabled = False  # the Receiver reconnects (see the module docstring)
        sdk.auto_reconnect_enabled = False
        self._timings = timings
        self._token_env = token_env
        self.receiver = host.receiver(self.connect_once, first_delay_s=timings.reconnect_first_delay_s,
                                      max_delay_s=timings.reconnect_max_delay_s,
                                      healthy_after_s=max(60.0, 6 * timings.ping_interval_s))
        #: Connections opened so far.
        self.connections = 0
        self._closed = False

    def start(self) -> None:
        """Start receiving (the first connection is opened in the background)."""
        self.receiver.start()

    async def fatal(self) -> StartupError:
        """Returns only when Slack refuses the app-level token."""
        return await self.receiver.fatal()

    async def _url(self) -> str:
        try:
            return await self.handler.client.issue_new_wss_url()
        except SlackApiError as exc:
            code = error_code(exc)
            if code in _TOKEN_REFUSED:
                raise StartupError(f"Slack refused the app-level token in ${self._token_env} ({code}); check "
                                   "surfaces.slack.app_token_env (an xapp- token with connections:write)") from None
            raise

    async def connect_once(self) -> None:
        """Open a connection and watch it; returns (raises) when it is gone."""
        sdk = self.handler.client
        sdk.wss_uri = await self._url()
        async with asyncio.timeout(self._timings.connect_timeout_s):
            # The SDK retries a refused connection itself: bounded by the timeout. (Its method is unannotated.)
            await sdk.connect()  # type: ignore[no-untyped-call]
        self.connections += 1
        log.info("slack: Socket Mode connected")
        interval = self._timings.ping_interval_s
        while True:
            await asyncio.sleep(interval / 2)
            if sdk.connect_operation_lock.locked():
                continue  # the SDK is following Slack's disconnect message to a new connection
            session = sdk.current_session
            if session is None or session.closed:
                failure = session.exception() if session is not None else None
                if isinstance(failure, aiohttp.ServerTimeoutError):  # aiohttp's heartbeat: the SDK's ping
                    raise ConnectionLost("Slack stopped answering pings on the Socket Mode connection")
                raise ConnectionLost("the Socket Mode connection closed")
            if await sdk.is_ping_pong_failing():
                quiet = time.time() - (sdk.last_ping_pong_time or time.time())
                sdk.last_ping_pong_time = None
                raise ConnectionLost(f"Slack answered no ping for {quiet:.0f} s")

    async def stop(self) -> None:
        """Stop receiving and close the socket (the Web API client stays open for final answers)."""
        if self._closed:
            return
        self._closed = True
        await self.receiver.stop()
        await self.handler.close_async()  # type: ignore[no-untyped-call]  # unannotated in slack-bolt
