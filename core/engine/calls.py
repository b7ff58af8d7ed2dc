"""One platform call of a streamer, by the delivery rules: the chat's pace first; a 429 holds the
chat for ``retry_after`` and the call is made again (while streaming, the next flush carries the
newer state instead: ``Deferred``); a chat that refused for good is not asked again; and a state
that must be shown is tried again with backoff (``attempts``). A call the platform took but whose answer
could not be read (``AnswerUnreadable``) may be taken as done: ``unreadable`` is then what it returns.

Relays sharing a store: an owner's call is checked against its lease (``fence``, from
``Ownership.guard``) right before it is made, after any wait for the chat's pace: past the lease's
deadline the call is not made (``LeaseLost``)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from core.engine.pacing import Pacer
from core.engine.streamed import Deferred
from core.engine.surface import (
    AnswerUnreadable,
    DeliveryError,
    DeliveryFailed,
    DeliveryRefused,
    RateLimit,
    RateLimited,
)

__all__ = ["Caller"]

log = logging.getLogger("acp_relay.engine.streamer")

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
#: Raises (``LeaseLost``) when the call may no longer be made.
Fence = Callable[[], None]

_RAISE: Any = object()  # ``unreadable`` not given: AnswerUnreadable is raised
#: Consecutive 429s tolerated for one call before the delivery counts as failed.
_MAX_RATE_LIMIT_WAITS = 20


class Caller:
    """Makes the calls into one chat; ``count`` counts them (failed ones included)."""

    def __init__(self, pacer: Pacer, rate_key: str, rate_limit: RateLimit | None, *, sleep: Sleep,
                 max_attempts: int, conversation_key: str, fence: Fence | None = None) -> None:
        self.pacer = pacer
        self.rate_key = rate_key
        self.rate_limit = rate_limit
        self.count = 0
        self._sleep = sleep
        self._max_attempts = max(1, max_attempts)
        self._key = conversation_key
        self._refused: DeliveryRefused | None = None
        self._fence = fence

    async def call(self, op: Callable[[], Awaitable[T]], final: bool, *, unreadable: T = _RAISE) -> T:
        """Make ``op`` in the chat's pace; ``final``: wait out 429s (else ``Deferred``). With ``unreadable``,
        an answer that cannot be read means the platform took the call: that value is returned."""
        try:
            return await self._call(op, final)
        except AnswerUnreadable as exc:
            if unreadable is _RAISE:
                raise
            log.warning("%s: the platform took a call, but its answer could not be read; taken as done (%s)",
                        self._key, exc)
            return unreadable

    async def _call(self, op: Callable[[], Awaitable[T]], final: bool) -> T:
        if self._refused is not None:
            raise self._refused  # the chat will never take anything: do not ask it again
        waits = 0
        while True:
            await self.pacer.wait(self.rate_key, self.rate_limit)
            if self._fence is not None:
                self._fence()
            self.count += 1
            try:
                return await op()
            except DeliveryRefused as exc:
                self._refused = exc
                raise
            except RateLimited as exc:
                waits += 1
                if waits > _MAX_RATE_LIMIT_WAITS:
                    raise DeliveryFailed("still rate limited") from exc
                self.pacer.hold(self.rate_key, exc.retry_after_s)
                if not final:
                    raise Deferred from exc

    async def attempts(self, sync: Callable[[], Awaitable[None]]) -> None:
        """Run ``sync`` until it succeeds; ``DeliveryFailed`` after ``max_attempts`` failed tries."""
        failure: DeliveryError | None = None
        for attempt in range(self._max_attempts):
            if attempt:
                await self._sleep(min(0.5 * 2 ** (attempt - 1), 8.0))
            try:
                await sync()
                return
            except DeliveryFailed as exc:
                failure = exc
                log.warning("delivery to %s failed (attempt %d of %d): %r", self._key, attempt + 1,
                            self._max_attempts, exc)
        raise DeliveryFailed(f"not delivered after {self._max_attempts} attempts") from failure
