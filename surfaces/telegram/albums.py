"""Webhook mode: an album's parts, kept until the album is whole, then taken in as one message.

An album (photos or files sent together) is a message per part sharing a ``media_group_id``, and no
part says how many there are. Polling reads an album whole (``polling``). Telegram posts a webhook the
updates of one chat one at a time, each once the one before was answered, so a webhook sees a part,
answers it, and only then hears of the next: taken as they came, the agent read the caption with the
first photo alone and answered each part. So each part is kept in the store (the post is answered
once it is kept: a relay stopped or killed meanwhile takes the album in at its next start) and the
album is taken in as one message once no part came for ``QUIET_S``, or at once when another update of
its chat comes (the person's next message is answered after the album, as they sent them).

Relays sharing a store behind one webhook address (a load balancer) each receive some of an album's
parts, and the person's next message may reach a relay that received none: ``shared``, each update of a
chat first takes in the albums of that chat the store keeps, whichever relay kept them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from core.surface_api import StoreError, SurfaceState, TaskSet

__all__ = ["QUIET_S", "Albums", "album_of", "chat_of"]

log = logging.getLogger("acp_relay.telegram.albums")

#: An album is whole once no part of it came for this long (its parts come back to back).
QUIET_S = 1.0
#: An album the store would not take in is offered again after this long (its parts stay kept).
RETRY_S = 5.0
#: The store keys of kept parts: ``album:<chat>:<media_group_id>:<update_id>``.
PREFIX = "album:"

Album = tuple[str, str]  # (chat id, media_group_id)
#: What Telegram's album ids look like (digits); another is not taken for one (its part is taken alone),
#: so that it can be part of a store key.
_GROUP_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
Take = Callable[[list[dict[str, Any]]], Awaitable[None]]


def album_of(data: Any) -> Album | None:
    """The chat and album of an update that is a part of an album; None for any other update."""
    message = data.get("message") if isinstance(data, dict) else None
    group = message.get("media_group_id") if isinstance(message, dict) else None
    chat = message.get("chat") if isinstance(message, dict) else None
    if not isinstance(group, str) or not _GROUP_ID.fullmatch(group) or not isinstance(chat, dict) \
            or not isinstance(chat.get("id"), int):
        return None
    return str(chat["id"]), group


def chat_of(data: Any) -> str | None:
    """The chat an update happened in (a message, an edit, a button press), as a string; None if none."""
    if not isinstance(data, dict):
        return None
    for kind in ("message", "edited_message"):
        if isinstance(found := data.get(kind), dict) and isinstance(chat := found.get("chat"), dict):
            return str(chat.get("id"))
    query = data.get("callback_query")
    message = query.get("message") if isinstance(query, dict) else None
    chat = message.get("chat") if isinstance(message, dict) else None
    return str(chat.get("id")) if isinstance(chat, dict) else None


def _prefix(album: Album) -> str:
    return f"{PREFIX}{album[0]}:{album[1]}:"


def _album_of_key(key: str) -> Album:
    chat, _, group = key.removeprefix(PREFIX).rpartition(":")[0].partition(":")
    return chat, group


def _update_id(key: str) -> int:
    return int(key.rsplit(":", 1)[1])


@dataclass
class _Waiting:
    """An album whose parts are kept: its task, and what cuts its wait short."""

    stirred: asyncio.Event = field(default_factory=asyncio.Event)  # a part came, or ``now`` was set
    now: bool = False  # take it in without waiting for more parts
    task: asyncio.Task[None] | None = None


class Albums:
    """The albums a webhook keeps until whole; ``take`` takes one in (its parts' updates, in order)."""

    def __init__(self, state: SurfaceState, take: Take, tasks: TaskSet, *, shared: bool = False,
                 quiet_s: float | None = None, retry_s: float | None = None) -> None:
        self._state = state
        self._shared = shared
        self._take = take
        self._tasks = tasks
        self.quiet_s = QUIET_S if quiet_s is None else quiet_s
        self.retry_s = RETRY_S if retry_s is None else retry_s
        self._waiting: dict[Album, _Waiting] = {}

    def keep(self, album: Album, update_id: int, data: dict[str, Any]) -> None:
        """Keep a part in the store until its album is taken in. ``StoreError``: not kept (the post is
        answered so that Telegram posts it again)."""
        self._state.set(f"{_prefix(album)}{update_id}", json.dumps(data))
        self._wait(album).stirred.set()

    async def flush(self, chat: str, *, but: Album | None = None) -> None:
        """Take in now every album of ``chat`` kept (``but`` that one): an update of the chat came after
        them, and is answered after them. ``shared``: those other relays kept too (a read of the store;
        ``StoreError`` if it cannot be read)."""
        if self._shared:
            for key in self._state.items(f"{PREFIX}{chat}:"):
                if (album := _album_of_key(key)) != but:
                    self._wait(album)
        albums = [a for a in self._waiting if a[0] == chat and a != but]
        for album in albums:
            waiting = self._waiting[album]
            waiting.now = True
            waiting.stirred.set()
        tasks = [task for a in albums if (task := self._waiting[a].task) is not None]
        if tasks:  # (``wait``: a post given up on meanwhile leaves them running, unlike ``gather``)
            await asyncio.wait(tasks)

    def resume(self) -> None:
        """Take in at once the albums the store keeps (a relay stopped or killed before taking them in)."""
        for key in self._state.items(PREFIX):
            self._wait(_album_of_key(key)).now = True

    def _wait(self, album: Album) -> _Waiting:
        waiting = self._waiting.get(album)
        if waiting is None:
            waiting = self._waiting[album] = _Waiting()
            waiting.task = self._tasks.spawn(self._settle(album, waiting), name=f"telegram-album-{album[1]}")
        return waiting

    async def _settle(self, album: Album, waiting: _Waiting) -> None:
        """Wait until the album is whole, take it in; again if a part came meanwhile, or the store refused."""
        refused = False
        try:
            while True:
                await self._quiet(waiting)
                try:
                    more = await self._take_kept(album)
                except StoreError as exc:  # its parts stay kept: offered again in a while (said once)
                    if not refused:
                        log.warning("an album in chat %s could not be taken in yet: %s", album[0], exc)
                    refused = True
                    await asyncio.sleep(self.retry_s)
                    continue
                except Exception:  # a bug: logged once, and the parts let go (never retried at every start)
                    log.exception("an album in chat %s could not be taken in; its parts are dropped", album[0])
                    self._state.delete(list(self._state.items(_prefix(album))))
                    return
                if not more:
                    return
        finally:
            if self._waiting.get(album) is waiting:
                del self._waiting[album]

    async def _quiet(self, waiting: _Waiting) -> None:
        """Return once no part came for ``quiet_s`` (at once when ``now`` is set)."""
        while not waiting.now:
            waiting.stirred.clear()
            try:
                async with asyncio.timeout(self.quiet_s):
                    await waiting.stirred.wait()
            except TimeoutError:
                return

    async def _take_kept(self, album: Album) -> bool:
        """Take in the album's kept parts as one message and forget them; whether parts came meanwhile."""
        kept = self._state.items(_prefix(album))
        if kept:
            keys = sorted(kept, key=_update_id)
            await self._take([json.loads(kept[key]) for key in keys])
            self._state.delete(keys)
        return bool(self._state.items(_prefix(album)))
