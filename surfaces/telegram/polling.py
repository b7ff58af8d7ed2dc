"""Long polling that loses nothing: the update offset advances only past what is stored.

PTB's ``Updater`` confirms an update (by the next ``getUpdates`` offset) as soon as it is queued,
and keeps the offset to itself, so a ``kill -9`` between the two loses the update. Here the relay
calls ``getUpdates`` itself: each update is taken in (journaled by the engine) first, then the next
offset is written to the store, and only the next ``getUpdates`` tells Telegram. A restart polls
from the stored offset; an update Telegram sends again is caught by the engine's de-duplication.

``getUpdates`` is asked for its raw answer and each update is read on its own: PTB's
``Bot.get_updates`` reads the whole batch at once, so one update it cannot parse (a newer Bot API
field, an odd server) failed every poll before the offset could move, and PTB logged the batch,
people's texts and all, at CRITICAL each time. An update that cannot be read is tried again on the
next few polls, then logged once (its id and what was wrong, never its text), stored as rejected,
confirmed, and the updates behind it go on.

An album (photos or files sent together) comes as an update a part, and a long poll answers at the
first: a batch that ends in one is asked for again shortly after, from the same offset (confirming
nothing), until the album stops growing; its parts are then taken in as one message, and the offset
moves past them together.

A poll that comes back empty before its ``timeout`` (the server does not long-poll) is followed by
a short pause, so such a server is not asked hundreds of times a second; Telegram itself answers an
empty poll only at the timeout, so nothing waits there.

A store that refuses an update (a full disk, the database held or away) does not end the polling:
the update is not confirmed, and it is asked for again after a pause (``STORE_PAUSE_S``, growing)
while the relay holds its message (``HeldMessages``). Ending the connection instead made the
receiver wait longer after each refusal, up to a minute, so the chat stayed deaf for that long after
the store was back. An offset the store refuses is kept in memory: the update is journaled already,
so a restart that polls from an older offset only receives repeats, which the relay knows.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Bot, Update
from telegram.error import Conflict, EndPointNotFound, InvalidToken, RetryAfter, TelegramError
from telegram.warnings import PTBUserWarning

from core.surface_api import StartupError, StoreError, SurfaceState
from surfaces.telegram.albums import album_of
from surfaces.telegram.errors import retry_after_s
from surfaces.telegram.intake import Intake
from surfaces.telegram.wording import token_refused

__all__ = ["ALBUM_WAITS", "ALBUM_WAIT_S", "ALLOWED_UPDATES", "IDLE_PAUSE_S", "PARSE_TRIES", "STORE_PAUSE_S", "Poller",
           "Sleep"]

log = logging.getLogger("acp_relay.telegram.polling")

#: What the relay reads (a person's edits too, and a Stop pressed on a streaming draft); everything else
#: (reactions, channel posts) Telegram keeps to itself.
ALLOWED_UPDATES = ("message", "edited_message", "callback_query", "stopped_message_generation")
#: The pause after a poll that brought nothing.
IDLE_PAUSE_S = 0.5
#: Polls that find an update unreadable before it is skipped.
PARSE_TRIES = 3
#: The pause before an update the store refused is asked for again: the first, twice as long each time
#: up to the second (seconds); short, so the updates behind it move soon after the store is back.
STORE_PAUSE_S = (0.5, 8.0)
#: Added to the long-poll timeout for the HTTP read (Telegram answers at ``timeout`` at the latest).
_READ_MARGIN_S = 10.0
#: A batch that ends in a part of an album (photos or files sent together: an update each) is asked for
#: again this long after, from the same offset (so nothing is confirmed), while the album grows, at most
#: ``ALBUM_WAITS`` times: a long poll answers at the first part, and the agent should read them together.
ALBUM_WAIT_S = 0.4
ALBUM_WAITS = 5

# The raw answer is asked for on purpose (see the module docstring); PTB would suggest get_updates.
warnings.filterwarnings("ignore", message=r"Please use 'Bot\.getUpdates'", category=PTBUserWarning)

Sleep = Callable[[float], Awaitable[None]]


class Poller:
    """``poll`` runs until the connection fails (the ``Receiver`` reconnects) or is cancelled."""

    def __init__(self, bot: Bot, state: SurfaceState, intake: Intake, *, timeout_s: int, token_env: str,
                 sleep: Sleep = asyncio.sleep, idle_pause_s: float = IDLE_PAUSE_S) -> None:
        self.bot = bot
        self.state = state
        self.intake = intake
        self.timeout_s = timeout_s
        self.token_env = token_env
        self._sleep = sleep
        self.idle_pause_s = idle_pause_s
        self._strikes: dict[int, int] = {}  # update id -> polls that found it unreadable
        self._offset_refused = False  # the store refused the offset (said once until it takes one)

    @property
    def _name(self) -> str:
        # Offsets belong to one bot: another token starts its own sequence of update ids.
        return f"offset:{self.bot.id}"

    def offset(self) -> int | None:
        """The first update not yet stored (None: whatever Telegram still holds)."""
        value = self.state.get(self._name)
        return int(value) if value else None

    async def _fetch(self, offset: int | None, wait_s: int, limit: int | None = None) -> list[Any]:
        """``getUpdates``, unread. Telegram's answer is a list; anything else is treated as nothing new."""
        result = await self.bot.do_api_request(
            "getUpdates", api_kwargs={"offset": offset, "timeout": wait_s, "limit": limit,
                                      "allowed_updates": list(ALLOWED_UPDATES)},
            read_timeout=wait_s + _READ_MARGIN_S)
        if not isinstance(result, list):
            log.warning("Telegram answered getUpdates with something that is not a list of updates; ignored")
            return []
        return result

    async def poll(self) -> None:
        """Fetch, take in, store the offset; again."""
        offset = self.offset()
        refused_pause_s = STORE_PAUSE_S[0]
        while True:
            began = time.monotonic()
            try:
                batch = await self._fetch(offset, self.timeout_s)
            except (InvalidToken, EndPointNotFound):  # a 404: PTB names it so for a raw call once getMe worked
                raise StartupError(token_refused(self.token_env)) from None
            except RetryAfter as exc:  # getUpdates itself is throttled: wait as told, then go on
                await self._sleep(retry_after_s(exc))
                continue
            except Conflict as exc:  # the receiver tries again after a pause, and says why each time
                raise ConnectionError(f"another program is polling this bot with the same token (409: {exc.message}); "
                                      "only one relay can use a bot token") from None
            if not batch:
                if time.monotonic() - began < self.timeout_s:  # came back early: it did not long-poll
                    await self._sleep(self.idle_pause_s)
                continue
            for unit in _units(await self._whole_albums(offset, batch)):
                data = unit[-1]  # the offset moves past the last of an album's parts
                update_id = data.get("update_id") if isinstance(data, dict) else None
                if not isinstance(update_id, int):
                    # Without its id it cannot be confirmed alone; the next update's offset confirms it.
                    log.warning("Telegram sent an update without an update_id; skipped")
                    continue
                if offset is not None and update_id < offset:
                    continue  # already stored (a server that ignores the offset sends it again)
                try:
                    taken = await (self._take(update_id, data) if len(unit) == 1 else self._take_album(unit))
                except StoreError as exc:  # not confirmed: asked for again (the relay holds a message meanwhile)
                    log.debug("the store refused Telegram update %s: %s", update_id, exc)
                    await self._sleep(refused_pause_s)
                    refused_pause_s = min(refused_pause_s * 2, STORE_PAUSE_S[1])
                    break
                refused_pause_s = STORE_PAUSE_S[0]
                if not taken:
                    await self._sleep(self.idle_pause_s)
                    break  # try it again with the next poll, before anything behind it
                offset = update_id + 1
                self._keep_offset(offset)

    def _keep_offset(self, offset: int) -> None:
        """Store the next offset; one the store refuses is kept in memory (see the module's doc)."""
        try:
            self.state.set(self._name, str(offset))
        except StoreError as exc:
            if not self._offset_refused:
                self._offset_refused = True
                log.warning("could not keep the Telegram update offset in the store (polling goes on; a restart "
                            "may receive some updates again, taken as repeats): %s", exc)
            return
        self._offset_refused = False

    async def _whole_albums(self, offset: int | None, batch: list[Any]) -> list[Any]:
        """``batch``, and the rest of the album it ends in (see ``ALBUM_WAIT_S``)."""
        for _ in range(ALBUM_WAITS):
            if album_of(batch[-1]) is None:
                break
            await self._sleep(ALBUM_WAIT_S)
            try:
                again = await self._fetch(offset, 0)
            except TelegramError as exc:  # the album as far as it came; the next poll brings the rest
                log.info("could not ask for the rest of an album: %s", exc)
                break
            if len(again) <= len(batch):
                break  # the album is whole
            batch = again
        return batch

    async def _take_album(self, parts: list[dict[str, Any]]) -> bool:
        """Take in an album's parts as one message; one that cannot be read leaves each taken on its own."""
        try:
            updates = [Update.de_json(data, self.bot) for data in parts]
        except Exception:  # whatever PTB raises: each part is tried, and skipped, on its own
            for data in parts:
                if not await self._take(data["update_id"], data):
                    return False
            return True
        await self.intake.take_album(updates)
        return True

    async def _take(self, update_id: int, data: dict[str, Any]) -> bool:
        """Read and take in one update; False: unreadable, try it again on the next poll."""
        try:
            update = Update.de_json(data, self.bot)
        except Exception as exc:  # whatever PTB raises for data it does not expect
            strikes = self._strikes[update_id] = self._strikes.get(update_id, 0) + 1
            if strikes < PARSE_TRIES:
                log.debug("update %s could not be read (%d of %d tries)", update_id, strikes, PARSE_TRIES,
                          exc_info=True)
                return False
            del self._strikes[update_id]
            self.intake.reject(update_id, data, exc)
            return True
        self._strikes.pop(update_id, None)
        await self.intake.take(update)
        return True

    async def confirm(self) -> None:
        """Tell Telegram what is stored (the next start would have; this saves it resending)."""
        offset = self.offset()
        if offset is not None:
            await self._fetch(offset, 0, limit=1)


def _units(batch: list[Any]) -> list[list[Any]]:
    """``batch`` as what is taken in at once: an update, or an album's parts that came one after another."""
    units: list[list[Any]] = []
    for data in batch:
        album = album_of(data)
        if units and album is not None and album_of(units[-1][-1]) == album:
            units[-1].append(data)
        else:
            units.append([data])
    return units
