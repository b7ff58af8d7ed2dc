"""Writes handed over in one round of the event loop, made together.

In a burst, hundreds of tabs' answers stream at once, and each streamed edit of a message was a commit
of its own: the transcript's commits were the largest share of the dashboard's CPU (issue 24). A
``Round`` takes each caller's item; once the round of the loop in which the first of them came is
over, it writes them all with one call (one transaction), in the order they came, and each caller
then gets its own result, or the exception that write raised. A caller that gave up meanwhile (its
task was cancelled) is left out of the write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Round"]

T = TypeVar("T")
R = TypeVar("R")


class Round(Generic[T, R]):
    """Hands the items of one round of the loop to ``write`` together; ``write`` returns one result an item."""

    def __init__(self, write: Callable[[list[T]], list[R]]) -> None:
        self._write = write
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []

    async def submit(self, item: T) -> R:
        """``item``'s result, once written with the others of this round."""
        loop = asyncio.get_running_loop()
        if not self._waiting:
            loop.call_soon(self._write_round)
        written: asyncio.Future[R] = loop.create_future()
        self._waiting.append((item, written))
        return await written

    def _write_round(self) -> None:
        waiting, self._waiting = [w for w in self._waiting if not w[1].done()], []
        if not waiting:
            return
        try:
            results = self._write([item for item, _ in waiting])
        except Exception as exc:  # each caller's to handle, as if it had written alone
            for _, written in waiting:
                written.set_exception(exc)
            return
        for (_, written), result in zip(waiting, results, strict=True):
            written.set_result(result)
