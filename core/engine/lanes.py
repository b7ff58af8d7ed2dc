"""One ordered lane of work per conversation; conversations run alongside each other.

For a surface that confirms a message to its platform once it is journaled (``Inbound.accept``):
what the engine hands back (a dispatch, a refusal to send) may take a while: a ``/model`` starts
the agent, a ``/stop`` waits until the turn has really ended, a notice waits for the chat's pace.
The confirmation must not wait for that (Telegram's other chats would wait with it; Slack wants
its acknowledgement within 3 seconds), yet one conversation's messages must be handled in the order
they came. So each conversation gets a lane: its jobs run one after another in a task the lane owns.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

__all__ = ["Lanes"]

log = logging.getLogger("acp_relay.engine.lanes")

Job = Callable[[], Awaitable[None]]


class Lanes:
    """``put(key, job)`` runs ``job`` after every job put earlier under ``key``."""

    def __init__(self, name: str) -> None:
        self.name = name  # the surface, for task names
        self._queues: dict[str, deque[Job]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._closed = False

    def put(self, key: str, job: Job) -> None:
        """Queue ``job`` in ``key``'s lane (started if idle)."""
        if self._closed:
            return
        self._queues.setdefault(key, deque()).append(job)
        if key not in self._tasks:
            self._tasks[key] = asyncio.create_task(self._drain(key), name=f"{self.name}-lane:{key}")

    async def _drain(self, key: str) -> None:
        queue = self._queues[key]
        try:
            while queue:
                job = queue.popleft()
                try:
                    await job()
                except Exception:  # one message's failure must not stall the ones behind it
                    log.exception("handling a message in %s failed", key)
        finally:
            del self._tasks[key]
            if not queue:
                del self._queues[key]

    @property
    def busy(self) -> bool:
        """Some lane still has work."""
        return bool(self._tasks)

    async def close(self) -> None:
        """Stop every lane; jobs not started are dropped (their messages stay journaled)."""
        self._closed = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
