"""What a prompt turn costs the relay before the agent answers (issue 24): in a burst, every task a turn
starts is paid for by every conversation before its first words, so a turn starts none of its own:
the prompt is written by the call itself, and its answer is waited on beside the turn's signals."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from core.acp.types import TextChunk


async def test_a_prompt_turn_starts_no_task(start, agent, events) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    loop = asyncio.get_running_loop()
    started: list[str] = []

    def counting(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kw: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kw)
        started.append(task.get_name())
        return task

    ev = events()
    loop.set_task_factory(counting)
    try:
        stats = await session.prompt("text hello", on_event=ev)
    finally:
        loop.set_task_factory(None)
    assert stats.text == "hello" and [e.text for e in ev.of(TextChunk)] == ["hello"]
    assert started == [], f"the turn started tasks: {started}"


async def test_the_prompt_is_written_before_the_turn_first_waits(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    turn = asyncio.create_task(session.prompt("text hello"))
    await asyncio.sleep(0)  # one step of the turn: up to its first wait
    assert rt.conn.pending == 1, "session/prompt is on its way to the agent"
    assert (await turn).text == "hello"
    assert rt.conn.pending == 0, "nothing is left waiting for an answer"


async def test_a_prompt_that_cannot_be_written_leaves_the_session_free(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    with pytest.raises(TypeError):  # not JSON: nothing reaches the agent
        await session.prompt([{"type": "text", "text": b"bytes"}])
    assert not session.busy and rt.conn.pending == 0
    assert (await session.prompt("text still here")).text == "still here"
