"""Store writes made in one round of the event loop, committed together at its end.

In a burst every new conversation keeps its new session in the store before its prompt is sent: one
commit each (about 55 us, the most of such a write) ahead of every first answer. The sessions' answers
come from the agent together, so their writes are made in the same round: committed together, each
writer still waits until its write is in the store.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from core.store import Store

__all__ = ["Batched"]

T = TypeVar("T")


class Batched:
    """``await batched.write(fn)``: ``fn`` (a store write) runs with the others written in this round, in
    one transaction, before the round ends; its result comes back. When the store fails, each writer
    of the round gets the error (nothing of theirs is kept)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._waiting: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []

    async def write(self, write: Callable[[], T]) -> T:
        """Run ``write`` with the others of this round; returns what it returned."""
        loop = asyncio.get_running_loop()
        if not self._waiting:
            loop.call_soon(self._commit)
        done: asyncio.Future[T] = loop.create_future()
        self._waiting.append((write, done))
        return await done

    def _commit(self) -> None:
        waiting, self._waiting = [w for w in self._waiting if not w[1].done()], []  # done: given up on
        if not waiting:
            return
        try:  # one on its own commits by itself: no BEGIN and COMMIT around it
            with self._store.transaction() if len(waiting) > 1 else contextlib.nullcontext():
                results = [write() for write, _ in waiting]
        except Exception as exc:
            for _, done in waiting:
                done.set_exception(exc)
            return
        for (_, done), result in zip(waiting, results, strict=True):
            done.set_result(result)
