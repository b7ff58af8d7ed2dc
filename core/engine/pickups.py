"""The engine's side of conversation ownership (relays sharing a store: ``core.engine.ownership``):
taking a conversation when a message for it arrives, answering its journaled messages in order
once it is this relay's (the pickup), and stopping it when its lease is lost.

Mixed into ``Engine``: what it needs of the engine is declared here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from core.engine.journal import Journal
from core.engine.messages import InboundMessage
from core.engine.ownership import Ownership
from core.engine.resend import ResendQuestions
from core.engine.surface import Surface
from core.engine.tasks import TaskSet
from core.store import StoreError

if TYPE_CHECKING:
    from collections import OrderedDict

    from core.engine.conversation import Conversation

__all__ = ["Pickups"]

log = logging.getLogger("acp_relay.engine.pickups")


class Pickups:
    """Mixed into ``Engine``."""

    ownership: Ownership | None
    journal: Journal
    surfaces: dict[str, Surface]
    conversations: OrderedDict[str, Conversation]
    resends: ResendQuestions
    tasks: TaskSet
    state: str
    _pickups: dict[str, asyncio.Lock]
    _taken: dict[str, set[tuple[str, str]]]

    @property
    def closing(self) -> bool:
        """Shutting down (the engine's)."""
        raise NotImplementedError  # the engine's

    def conversation(self, key: str, surface: Surface) -> Conversation:
        """The conversation under ``key`` (the engine's)."""
        raise NotImplementedError  # the engine's

    async def _dispatch(self, conv: Conversation, msg: InboundMessage, *, replay: bool = False) -> None:
        raise NotImplementedError  # the engine's

    def _serves(self, key: str) -> bool:
        return key.split(":", 1)[0] in self.surfaces

    def _disown(self, key: str) -> None:
        """The lease on ``key`` was lost: stop it here at once, forget it (the new owner answers)."""
        self._taken.pop(key, None)
        conv = self.conversations.pop(key, None)
        if conv is not None:
            conv.disown()

    def _spawn_pickup(self, key: str) -> None:
        if self.state == "running":
            self.tasks.spawn(self._pickup(key), name=f"pickup-{key}")

    async def _pickup(self, key: str) -> None:
        """Answer ``key``'s journaled messages not handed to it yet, in arrival order (this relay owns it)."""
        ownership = self.ownership
        assert ownership is not None
        lock = self._pickups.setdefault(key, asyncio.Lock())
        async with lock:
            try:
                unfinished = self.journal.unfinished(key)
            except StoreError as exc:  # the database away: looked up again while the conversation is ours
                log.warning("could not look up what waits in %s (looked up again at the next heartbeat): %s",
                            key, exc)
                ownership.pick_up_later(key)
                return
            taken = self._taken.setdefault(key, set())
            taken &= {(u.message.surface, u.message.message_id) for u in unfinished}  # the rest are done
            for item in unfinished:
                msg = item.message
                surface = self.surfaces.get(msg.surface)
                if surface is None or (msg.surface, msg.message_id) in taken:
                    continue
                if self.closing or ownership.lease(key) is None:
                    return  # no longer ours: its new owner (or this relay's next start) answers the rest
                taken.add((msg.surface, msg.message_id))
                if item.tool_may_have_run:  # a dead owner's turn may have run a tool: ask first
                    self.conversation(key, surface).open_ahead()  # while the person decides
                    await self.resends.ask(surface, item)
                    continue
                await self._dispatch(self.conversation(key, surface), msg, replay=item.reply_started)
        if not lock.locked() and self._pickups.get(key) is lock:
            del self._pickups[key]

    def _owned(self, key: str) -> Callable[[], Awaitable[None]] | None:
        """Relays sharing a store: the owner answers. Taken here if nobody owns it; else its owner is woken."""
        assert self.ownership is not None
        if not self.ownership.take(key):
            self.ownership.wake(key)
            return None

        async def pickup() -> None:
            if not self.closing:
                await self._pickup(key)

        return pickup
