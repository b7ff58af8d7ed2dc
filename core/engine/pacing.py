"""One pace per chat, shared by everything the relay sends into it.

Streamed edits, notices, approval prompts and their settle edits in one chat all reserve their slot
here, under the chat's ``rate_key``, so several streams in one chat cannot push it into flood
control together. A 429 holds the whole chat for ``retry_after``. Slots are reserved before the
caller sleeps, so concurrent callers never take the same one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from core.engine.surface import RateLimit

__all__ = ["Pacer"]

Sleep = Callable[[float], Awaitable[None]]

#: Chats whose last slot is this far in the past are forgotten (their pace starts afresh anyway).
_FORGET_AFTER_S = 300.0
_PRUNE_ABOVE = 1024


class Pacer:
    """Spaces calls into each chat ``per_s / calls`` seconds apart and honours 429 holds."""

    def __init__(self, *, sleep: Sleep = asyncio.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self._sleep = sleep
        self._clock = clock
        self._next: dict[str, float] = {}  # rate key -> earliest time of its next call

    def reserve(self, key: str, limit: RateLimit | None) -> float:
        """Take the chat's next slot; returns how long the caller must wait for it (0: go now)."""
        now = self._clock()
        slot = max(now, self._next.get(key, now))
        spacing = limit.per_s / limit.calls if limit is not None and limit.calls > 0 else 0.0
        if spacing > 0 or slot > now:
            self._next[key] = slot + spacing
        if len(self._next) > _PRUNE_ABOVE:
            self._forget_idle(now)
        return slot - now

    async def wait(self, key: str, limit: RateLimit | None) -> None:
        """Wait for the chat's next slot."""
        delay = self.reserve(key, limit)
        if delay > 0:
            await self._sleep(delay)

    def hold(self, key: str, seconds: float) -> None:
        """The platform said 429 in this chat: nothing goes there for ``seconds``."""
        until = self._clock() + max(0.0, seconds)
        self._next[key] = max(self._next.get(key, until), until)

    def _forget_idle(self, now: float) -> None:
        for key in [k for k, t in self._next.items() if t < now - _FORGET_AFTER_S]:
            del self._next[key]

    def __len__(self) -> int:
        return len(self._next)
