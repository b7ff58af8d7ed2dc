"""An owner's writes kept while the database does not answer, written when it answers again.

Relays sharing a PostgreSQL store: while the database is away, a turn already running goes on (it
may, until its lease's deadline) and its answer reaches the platform, but what the owner notes about
it cannot be written: the platform messages the answer is shown in, the tools it ran, that the
message was answered. Dropped, they would make the message look unanswered once the database is
back, and it would be answered a second time; raised, they would break the turn half-way. So a
write that fails because the database did not answer (a transient ``StoreError``) is kept, in order
with the conversation's later writes, and written on the heartbeat once the database answers,
fenced by the lease it was made under: if another relay took the conversation over meanwhile
(``LeaseLost``), the kept writes are dropped and the new owner answers what is left. A conversation
with writes kept starts no new turn until they are written (``settled``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from core.store import LeaseLost, StoreError

__all__ = ["DeferredWrites"]

log = logging.getLogger("acp_relay.engine.deferred")

Write = Callable[[], object]


class DeferredWrites:
    """Writes per conversation key that wait for the database."""

    def __init__(self) -> None:
        self._kept: dict[str, list[Write]] = {}
        self._settled: dict[str, asyncio.Event] = {}

    def write(self, key: str, write: Write) -> None:
        """Run ``write`` now, or keep it if the database does not answer (or writes of ``key`` are
        already kept: order matters). ``LeaseLost`` and a failure that is not transient are raised."""
        kept = self._kept.get(key)
        if kept is not None:
            kept.append(write)
            return
        try:
            write()
        except LeaseLost:
            raise
        except StoreError as exc:
            if not exc.transient:
                raise
            log.warning("kept a write about %s until the database answers again: %s", key, exc)
            self._kept[key] = [write]
            self._settled.setdefault(key, asyncio.Event()).clear()

    def pending(self, key: str) -> bool:
        """Writes of ``key`` are kept."""
        return key in self._kept

    async def settled(self, key: str) -> None:
        """Returns once no write of ``key`` is kept (at once if none is)."""
        while key in self._kept:
            await self._settled.setdefault(key, asyncio.Event()).wait()

    def flush(self, key: str | None = None) -> bool:
        """Write what is kept (``key``'s alone, if given), in order; False while the database still
        does not answer. A conversation taken over meanwhile loses its kept writes."""
        for k in [key] if key is not None else list(self._kept):
            kept = self._kept.get(k)
            count = len(kept or ())
            while kept:
                try:
                    kept[0]()
                except LeaseLost as exc:
                    log.warning("dropped %d kept writes about %s: %s", len(kept), k, exc)
                    kept.clear()
                except StoreError as exc:
                    if exc.transient:
                        return False
                    log.error("dropped a kept write about %s the database refused: %s", k, exc)
                    kept.pop(0)
                else:
                    kept.pop(0)
            if kept is not None:
                log.info("wrote what was kept about %s (%d writes, or fewer if it was taken over)", k, count)
                del self._kept[k]
                self._settled.pop(k, asyncio.Event()).set()
        return True
