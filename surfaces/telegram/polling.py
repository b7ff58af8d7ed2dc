"""Long polling that loses nothing: the update offset advances only past what is stored.

PTB's ``Updater`` confirms an update (by the next ``getUpdates`` offset) as soon as it is queued,
and keeps the offset to itself, so a ``kill -9`` between the two loses the update. Here the relay
calls ``getUpdates`` itself: each update is taken in (journaled by the engine) first, then the next
offset is written to the store, and only the next ``getUpdates`` tells Telegram. A restart polls
from the stored offset; an update Telegram sends again is caught by the engine's de-duplication.
"""

from __future__ import annotations

import asyncio
import logging

from telegram import Bot
from telegram.error import InvalidToken, RetryAfter

from core.engine.surface import StartupError
from core.store import Store
from surfaces.telegram.errors import retry_after_s
from surfaces.telegram.intake import Intake
from surfaces.telegram.keys import SURFACE_NAME
from surfaces.telegram.wording import token_refused

__all__ = ["ALLOWED_UPDATES", "Poller"]

log = logging.getLogger("acp_relay.telegram.polling")

#: What the relay reads; everything else (edits, reactions, channel posts) Telegram keeps to itself.
ALLOWED_UPDATES = ("message", "callback_query")


class Poller:
    """``poll`` runs until the connection fails (the ``Receiver`` reconnects) or is cancelled."""

    def __init__(self, bot: Bot, store: Store, intake: Intake, *, timeout_s: int, token_env: str) -> None:
        self.bot = bot
        self.store = store
        self.intake = intake
        self.timeout_s = timeout_s
        self.token_env = token_env

    @property
    def _name(self) -> str:
        # Offsets belong to one bot: another token starts its own sequence of update ids.
        return f"offset:{self.bot.id}"

    def offset(self) -> int | None:
        """The first update not yet stored (None: whatever Telegram still holds)."""
        value = self.store.get_offset(SURFACE_NAME, self._name)
        return int(value) if value else None

    async def poll(self) -> None:
        """Fetch, take in, store the offset; again."""
        offset = self.offset()
        while True:
            try:
                updates = await self.bot.get_updates(offset=offset, timeout=self.timeout_s,
                                                     allowed_updates=list(ALLOWED_UPDATES))
            except InvalidToken:
                raise StartupError(token_refused(self.token_env)) from None
            except RetryAfter as exc:  # getUpdates itself is throttled: wait as told, then go on
                await asyncio.sleep(retry_after_s(exc))
                continue
            for update in updates:
                await self.intake.take(update)
                offset = update.update_id + 1
                self.store.set_offset(SURFACE_NAME, self._name, str(offset))

    async def confirm(self) -> None:
        """Tell Telegram what is stored (the next start would have; this saves it resending)."""
        offset = self.offset()
        if offset is not None:
            await self.bot.get_updates(offset=offset, timeout=0, limit=1, allowed_updates=list(ALLOWED_UPDATES))
