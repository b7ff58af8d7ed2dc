"""A notification (``NOTIFY channel, payload``) and the in-process delivery of the SQLite backend.

PostgreSQL delivers notifications to every listening connection, in any relay, when the transaction
that sent them commits. A SQLite store is one relay's own, so its notifications go to the listeners
in the same process, with the same rule: sent on commit, dropped on rollback.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass

__all__ = ["LocalHub", "Note"]


@dataclass(frozen=True, slots=True)
class Note:
    """One notification: its channel and its payload (short text: PostgreSQL takes under 8000 bytes)."""

    channel: str
    payload: str


class LocalHub:
    """The listeners of one process, each with its loop and queue (a store call may come from a thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[tuple[frozenset[str], asyncio.AbstractEventLoop, asyncio.Queue[Note]]] = []

    def deliver(self, notes: Iterable[Note]) -> None:
        """Hand ``notes`` to every listener of their channel, in order."""
        with self._lock:
            listeners = list(self._listeners)
        for note in notes:
            for channels, loop, queue in listeners:
                if note.channel in channels and not loop.is_closed():
                    loop.call_soon_threadsafe(queue.put_nowait, note)

    @asynccontextmanager
    async def listen(self, channels: Iterable[str]) -> AsyncIterator[AsyncIterator[Note]]:
        """Listen on ``channels`` until the block ends; yields the notes as they come."""
        queue: asyncio.Queue[Note] = asyncio.Queue()
        entry = (frozenset(channels), asyncio.get_running_loop(), queue)
        with self._lock:
            self._listeners.append(entry)
        try:
            yield _drain(queue)
        finally:
            with self._lock:
                self._listeners.remove(entry)


async def _drain(queue: asyncio.Queue[Note]) -> AsyncIterator[Note]:
    while True:
        yield await queue.get()
