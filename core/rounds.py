"""Work handed over in one round of the event loop, done together.

In a burst, hundreds of conversations make the same small write at once: the journal of a person's
message, a new session kept, a message in the dashboard's transcript, a streamed edit. Each was a
commit of its own, and a commit is most of such a write (issue 24). A ``Round`` takes each caller's
item; once the round of the loop in which the first of them came is over, it hands them all to one
call (one transaction), in the order they came, and each caller then gets its own result, or the
exception that call raised. A caller that gave up meanwhile (its task was cancelled) is left out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Round"]

T = TypeVar("T")
R = TypeVar("R")


class Round(Generic[T, R]):
    """Hands the items of one round of the loop to ``write`` together; ``write`` returns one result an item."""

    def __init__(self, write: Callable[[list[T]], Sequence[R]]) -> None:
        self._write = write
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []

    async def submit(self, item: T) -> R:
        """``item``'s result, once written with the others of this round."""
        return await self.put(item)

    def put(self, item: T) -> asyncio.Future[R]:
        """Queue ``item`` in this round without waiting for it: the future is its result once written.
        Rounds first given work in the same round of the loop are written in that order."""
        loop = asyncio.get_running_loop()
        if not self._waiting:
            loop.call_soon(self.flush)
        written: asyncio.Future[R] = loop.create_future()
        self._waiting.append((item, written))
        return written

    def flush(self) -> None:
        """Write what is waiting now (also called at the round's end): for work that must come after it."""
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
