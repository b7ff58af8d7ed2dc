"""The tasks a turn starts (issue 24): in a burst each one is paid for by every conversation before its
first words, so what most turns never use is not started. The "still retrying" line's ticker starts
only for an agent known to retry by itself, or once the agent says it is retrying."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any


@asynccontextmanager
async def tasks_started() -> AsyncIterator[list[asyncio.Task[Any]]]:
    """The tasks started in the block (their names are read after: a task is named once made)."""
    loop = asyncio.get_running_loop()
    started: list[asyncio.Task[Any]] = []

    def factory(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kw: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kw)
        started.append(task)
        return task

    loop.set_task_factory(factory)
    try:
        yield started
    finally:
        loop.set_task_factory(None)


def named(tasks: list[asyncio.Task[Any]], name: str) -> int:
    return sum(task.get_name() == name for task in tasks)


async def test_a_turn_of_an_agent_that_does_not_retry_by_itself_starts_no_patience_ticker(relay) -> None:
    r = await relay()
    async with tasks_started() as started:
        reply = await r.ask("text hello")
    assert reply.text.startswith("hello")
    assert named(started, "turn-patience") == 0


async def test_an_agent_known_to_retry_by_itself_gets_the_ticker(relay) -> None:
    r = await relay(agents={"fake": {"backend": "qwen"}})
    async with tasks_started() as started:
        reply = await r.ask("text hello")
    assert reply.text.startswith("hello")
    assert named(started, "turn-patience") == 1

