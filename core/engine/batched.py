"""Store writes made in one round of the event loop, committed together at its end.

In a burst every new conversation keeps its new session in the store before its prompt is sent: one
commit each (about 55 us, the most of such a write) ahead of every first answer. The sessions' answers
come from the agent together, so their writes are made in the same round: committed together, each
writer still waits until its write is in the store. So are the records of the answers' first
messages, made together once their first words are shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar, cast

from core.rounds import Round
from core.store import Store

__all__ = ["Batched", "together"]

T = TypeVar("T")

log = logging.getLogger("acp_relay.engine.batched")


def together(store: Store, writes: int) -> contextlib.AbstractContextManager[None]:
    """One transaction around ``writes`` writes; one on its own commits by itself (no BEGIN and COMMIT)."""
    return store.transaction() if writes > 1 else contextlib.nullcontext()


def _unheard(written: asyncio.Future[Any]) -> None:
    """The write of a writer cancelled while it waited: its failure is said here, once (else nobody does)."""
    exc = None if written.cancelled() else written.exception()
    if exc is not None:
        log.warning("a store write whose writer was stopped meanwhile failed: %s", exc)


class Batched:
    """``await batched.write(fn)``: ``fn`` (a store write) runs with the others written in this round, in
    one transaction, before the round ends; its result comes back. When the store fails, each writer
    of the round gets the error (nothing of theirs is kept)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._round: Round[Callable[[], Any], Any] = Round(self._commit)

    async def write(self, write: Callable[[], T]) -> T:
        """Run ``write`` with the others of this round; returns what it returned."""
        return cast(T, await self._round.submit(write))

    async def write_through(self, write: Callable[[], object]) -> None:
        """``write``, written even if the writer is cancelled while it waits: for a note of what already
        happened (a message the platform now shows), which a stop must not lose. A failure the cancelled
        writer can no longer hear of is logged."""
        written = self._round.put(write)
        try:
            await asyncio.shield(written)
        except asyncio.CancelledError:
            written.add_done_callback(_unheard)
            raise

    def _commit(self, writes: list[Callable[[], Any]]) -> list[Any]:
        with together(self._store, len(writes)):
            return [write() for write in writes]
