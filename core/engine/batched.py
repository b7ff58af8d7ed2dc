"""Store writes made in one round of the event loop, committed together at its end.

In a burst every new conversation keeps its new session in the store before its prompt is sent: one
commit each (about 55 us, the most of such a write) ahead of every first answer. The sessions' answers
come from the agent together, so their writes are made in the same round: committed together, each
writer still waits until its write is in the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar, cast

from core.rounds import Round
from core.store import Store

__all__ = ["Batched", "together"]

T = TypeVar("T")


def together(store: Store, writes: int) -> contextlib.AbstractContextManager[None]:
    """One transaction around ``writes`` writes; one on its own commits by itself (no BEGIN and COMMIT)."""
    return store.transaction() if writes > 1 else contextlib.nullcontext()


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

    def _commit(self, writes: list[Callable[[], Any]]) -> list[Any]:
        with together(self._store, len(writes)):
            return [write() for write in writes]
