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

__all__ = ["LocalHub", "Note", "NoteQueue"]


@dataclass(frozen=True, slots=True)
class Note:
    """One notification: its channel and its payload (short text: PostgreSQL takes under 8000 bytes)."""

    channel: str
    payload: str


class NoteQueue:
    """The notes heard by one listener, in order: ``async for note in queue`` or ``await anext(queue)``.

    A queue, not a generator: a wait for the next note that is cancelled (``asyncio.wait_for``)
    leaves it usable. A failure put in the queue (the listening connection was lost) is raised
    when it is reached, and every wait after it raises it again."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Note | Exception] = asyncio.Queue()
        self._failed: Exception | None = None

    def put(self, item: Note | Exception) -> None:
        """Hand over a note, or the failure that ends the listening."""
        self._queue.put_nowait(item)

    def __aiter__(self) -> NoteQueue:
        return self

    async def __anext__(self) -> Note:
        if self._failed is not None:
            raise self._failed
        item = await self._queue.get()
        if isinstance(item, Exception):
            self._failed = item
            raise item
        return item


class LocalHub:
    """The listeners of one process, each with its loop and queue (a store call may come from a thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[tuple[frozenset[str], asyncio.AbstractEventLoop, NoteQueue]] = []

    def deliver(self, notes: Iterable[Note]) -> None:
        """Hand ``notes`` to every listener of their channel, in order."""
        with self._lock:
            listeners = list(self._listeners)
        for note in notes:
            for channels, loop, queue in listeners:
                if note.channel in channels and not loop.is_closed():
                    loop.call_soon_threadsafe(queue.put, note)

    @asynccontextmanager
    async def listen(self, channels: Iterable[str]) -> AsyncIterator[AsyncIterator[Note]]:
        """Listen on ``channels`` until the block ends; yields the notes as they come."""
        queue = NoteQueue()
        entry = (frozenset(channels), asyncio.get_running_loop(), queue)
        with self._lock:
            self._listeners.append(entry)
        try:
            yield queue
        finally:
            with self._lock:
                self._listeners.remove(entry)
