"""One pace per chat, shared by everything the relay sends into it.

Streamed edits, notices, approval prompts and their settle edits in one chat all reserve their slot
here, under the chat's ``rate_key``, so several streams in one chat cannot push it into flood
control together. A 429 holds the whole chat for ``retry_after``. Slots are reserved before the
caller sleeps, so concurrent callers never take the same one.

The pace is the generic cell rate algorithm: calls are ``per_s / calls`` seconds apart on average,
and after a quiet moment up to ``burst`` of them go at once (the first answer after a pause is not
held back for a slot its chat does not need).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from core.engine.surface import RateLimit

__all__ = ["Pacer"]

log = logging.getLogger("acp_relay.engine.pacing")

Sleep = Callable[[float], Awaitable[None]]

#: Chats whose last slot is this far in the past are forgotten (their pace starts afresh anyway).
_FORGET_AFTER_S = 300.0


class Pacer:
    """Paces calls into each chat (``RateLimit``) and honours 429 holds."""

    def __init__(self, *, sleep: Sleep = asyncio.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self._sleep = sleep
        self._clock = clock
        # rate key -> the theoretical time of its next call, the chat used longest ago first
        self._tat: OrderedDict[str, float] = OrderedDict()
        self._held: dict[str, float] = {}  # rate key -> the end of a 429 hold

    def reserve(self, key: str, limit: RateLimit | None) -> float:
        """Take the chat's next slot; returns how long the caller must wait for it (0: go now)."""
        now = self._clock()
        held = self._held.get(key, now)
        if held <= now:
            self._held.pop(key, None)
        if limit is None or limit.calls <= 0:
            return max(0.0, held - now)
        interval = limit.per_s / limit.calls
        tat = max(self._tat.get(key, now), now, held)
        at = max(now, held, tat - (max(1, limit.burst) - 1) * interval)
        self._tat[key] = tat + interval
        self._tat.move_to_end(key)
        self._forget_idle(now)
        return at - now

    async def wait(self, key: str, limit: RateLimit | None) -> None:
        """Wait for the chat's next slot."""
        delay = self.reserve(key, limit)
        if delay > 0:
            await self._sleep(delay)

    def hold(self, key: str, seconds: float) -> None:
        """The platform said 429 in this chat: nothing goes there for ``seconds``."""
        until = self._clock() + max(0.0, seconds)
        self._held[key] = max(self._held.get(key, until), until)
        log.info("rate limited: nothing goes to %s for %.0f s", key, seconds)

    def _forget_idle(self, now: float) -> None:
        """Forget the chats used longest ago while their pace is long over: a call looks at the chats it
        forgets and one more, never at every chat known. A chat with a backlog of slots still ahead
        keeps those used after it for a while longer; they go once it does."""
        cutoff = now - _FORGET_AFTER_S
        while self._tat:
            key, tat = next(iter(self._tat.items()))
            if tat >= cutoff:
                return
            del self._tat[key]

    def __len__(self) -> int:
        return len(self._tat) + len(self._held)
