"""HTTP mode: Bolt's ``/slack/events`` on 127.0.0.1 (a reverse proxy fronts it), signatures checked first.

Every request must carry Slack's signature of its exact body and a timestamp within five minutes
(``slack_sdk.signature.SignatureVerifier``). A forged, stale, missing or malformed one is answered
401 before Bolt sees the request, so it never reaches a listener. The check runs here rather than in
Bolt's own middleware because that one answers 500 to a non-numeric timestamp (``int()`` raises
inside it) and calls ``auth.test`` for requests it has not verified yet.
"""

from __future__ import annotations

import errno
import logging

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

from core.surface_api import LISTEN_BACKLOG, RefusalLog, StartupError

__all__ = ["EVENTS_PATH", "HttpReceiver", "signature_ok"]

log = logging.getLogger("acp_relay.slack.http")

EVENTS_PATH = "/slack/events"
_HOST = "127.0.0.1"


def signature_ok(verifier: SignatureVerifier, body: bytes, timestamp: str, signature: str) -> bool:
    """True only for a well-formed, fresh timestamp and the right signature of ``body``."""
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return False
    if not (signature.isascii() and signature.startswith("v0=")):
        return False
    return verifier.is_valid(body, timestamp, signature)


class HttpReceiver:
    """The aiohttp server that hands verified requests to the Bolt app."""

    def __init__(self, app: AsyncApp, signing_secret: str, port: int) -> None:
        self._bolt = app
        self._verifier = SignatureVerifier(signing_secret)
        self._port = port
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._refused = RefusalLog(log, f"a request to {EVENTS_PATH} with a missing, stale or wrong signature",
                                   level=logging.INFO)

    async def _events(self, request: web.Request) -> web.Response:
        body = await request.read()
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        if not signature_ok(self._verifier, body, timestamp, signature):
            self._refused.refused(request.remote)
            return web.json_response({"error": "invalid request"}, status=401)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return web.json_response({"error": "the body is not UTF-8"}, status=400)
        response = await self._bolt.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)

    async def start(self) -> None:
        """Serve on 127.0.0.1:``port``; ``StartupError`` when the port cannot be had."""
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_post(EVENTS_PATH, self._events)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, _HOST, self._port, backlog=LISTEN_BACKLOG)
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            reason = "is already in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
            raise StartupError(f"{_HOST}:{self._port} {reason}; change surfaces.slack.http_port") from None
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop serving."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
