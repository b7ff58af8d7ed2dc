"""Webhook mode: Telegram posts each update to the relay (aiohttp, behind a reverse proxy).

Every post must carry the secret in ``X-Telegram-Bot-Api-Secret-Token`` (the one given to
``setWebhook``); a wrong or missing one is answered 403 and never reaches the core. The relay
answers 200 only once the update is taken in (journaled): a 500 (the store failed) makes
Telegram post it again later, and the core's de-duplication catches a repeat. An update PTB cannot
read is stored as rejected and answered 200 at once, as polling skips it: Telegram posts nothing
else until a post is answered 2xx, and would post that one for ever. An album's parts are kept in the
store until the album is whole (``albums``), then taken in as one message.
"""

from __future__ import annotations

import errno
import hmac
import json
import logging
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from telegram import Bot, Update

from core.surface_api import LISTEN_BACKLOG, RefusalLog, StartupError, StoreError, SurfaceState, TaskSet
from surfaces.telegram.albums import Albums, album_of, chat_of
from surfaces.telegram.intake import Intake
from surfaces.telegram.wording import webhook_bind_failed

__all__ = ["SECRET_HEADER", "Webhook", "webhook_path"]

log = logging.getLogger("acp_relay.telegram.webhook")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: Updates are small; anything larger is not Telegram.
_MAX_BODY = 1024 * 1024


def webhook_path(url: str) -> str:
    """The path the relay serves: the path of the public URL Telegram posts to."""
    return urlsplit(url).path or "/"


class Webhook:
    """The aiohttp server that takes Telegram's posts."""

    def __init__(self, bot: Bot, intake: Intake, secret: str, path: str, *, state: SurfaceState,
                 tasks: TaskSet, shared: bool = False) -> None:
        self.bot = bot
        self.intake = intake
        self.albums = Albums(state, self._take_album, tasks, shared=shared)
        self._secret = secret.encode()
        self.path = path
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_post(path, self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        self.port: int | None = None
        self._refused = RefusalLog(log, "a webhook post without the right secret")

    async def start(self, host: str, port: int) -> None:
        """Listen on ``host``:``port`` (0: any free port; ``port`` then says which)."""
        await self._runner.setup()
        try:
            site = web.TCPSite(self._runner, host or None, port, backlog=LISTEN_BACKLOG)
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            reason = "already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or type(exc).__name__)
            raise StartupError(webhook_bind_failed(f"{host}:{port}", reason)) from None
        self.port = int(self._runner.addresses[0][1])
        self.albums.resume()  # kept by a relay that stopped before taking them in

    async def stop(self) -> None:
        """Stop taking posts (Telegram keeps what it could not deliver and tries again later)."""
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            self._refused.refused(request.remote)
            return web.Response(status=403, text="forbidden")
        try:
            data: Any = json.loads(await request.read())
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("update_id"), int):
            log.warning("refused a webhook post that is not a Telegram update")
            return web.Response(status=400, text="not an update")
        album, chat = album_of(data), chat_of(data)
        try:
            if chat is not None:  # what came before in the chat is taken in first
                await self.albums.flush(chat, but=album)
            if album is not None:
                self.albums.keep(album, data["update_id"], data)
            else:
                await self._take(data)
        except StoreError as exc:
            log.warning("could not store a Telegram update (Telegram will send it again): %s", exc)
            if album is not None:
                self._tell_unkept(data, exc)
            return web.Response(status=500, text="try again")
        return web.Response(text="ok")

    def _tell_unkept(self, data: dict[str, Any], exc: StoreError) -> None:
        try:
            update = Update.de_json(data, self.bot)
        except Exception:  # unreadable: nobody to tell
            return
        self.intake.unkept(update, exc)

    async def _take(self, data: dict[str, Any]) -> None:
        try:
            update = Update.de_json(data, self.bot)
        except Exception as exc:  # whatever PTB raises for data it does not expect, as polling skips it
            self.intake.reject(data["update_id"], data, exc)
        else:
            await self.intake.take(update)

    async def _take_album(self, parts: list[dict[str, Any]]) -> None:
        """An album's parts, as one message; one PTB cannot read leaves each part taken on its own."""
        try:
            updates = [Update.de_json(data, self.bot) for data in parts]
        except Exception:  # whatever PTB raises: each part is tried, and skipped, on its own
            for data in parts:
                await self._take(data)
            return
        await self.intake.take_album(updates)
