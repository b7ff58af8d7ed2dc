"""Owned background tasks: every task has a name and an owner that awaits or cancels it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

__all__ = ["TaskSet"]

log = logging.getLogger("acp_relay.engine.tasks")


class TaskSet:
    """A supervisor for the engine's tasks. A task that dies with an exception is logged once."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Start a named task owned by this set: a failure is logged, ``close()`` cancels it."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task %s failed", task.get_name(), exc_info=task.exception())

    async def close(self, timeout_s: float = 10.0) -> None:
        """Cancel what is still running and wait for it to finish.

        A task may spawn another while it unwinds (an approval being settled): those are
        cancelled too, so nothing outlives the owner.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self._tasks and (remaining := deadline - loop.time()) > 0:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks, timeout=remaining)

    def __len__(self) -> int:
        return len(self._tasks)
