"""Two edges of the runtime: a hung session/load is not kept alive by another session's frames,
and an agent that dies while a person is being asked ends the question at once."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from core.acp.client import AcpProcessDied
from core.acp.session_handle import AcpRequestTimeout

STREAMING = "\n".join(f"text t{i}\nsleep 0.1" for i in range(30))  # ~3 s of frames


async def test_a_hung_load_is_not_kept_alive_by_another_sessions_frames(start, agent, tmp_path) -> None:
    rt = await start(agent("--state-dir", str(tmp_path / "state"), "--load-delay", "10", "--load-replay", "1"))
    first = await rt.new_session()
    await first.prompt("text remember")
    rt.forget(first.session_id)
    busy = await rt.new_session()
    rt.request_timeout_s = 0.3
    sibling = asyncio.create_task(busy.prompt(STREAMING))
    with pytest.raises(AcpRequestTimeout):
        await rt.load_session(first.session_id)
    assert not sibling.done(), "the load timed out while the other session was still streaming"
    await busy.cancel()
    await sibling


async def test_an_agent_dying_while_the_person_is_asked_ends_the_question_and_the_turn(start, agent) -> None:
    rt = await start(agent(tool_gate="ask"))
    session = await rt.new_session()
    asked = asyncio.Event()
    question_cancelled = asyncio.Event()

    async def approver(request: object) -> str:
        asked.set()
        try:
            await asyncio.Event().wait()  # a person who never answers
        except asyncio.CancelledError:
            question_cancelled.set()
            raise
        return "allow_once"

    turn = asyncio.create_task(session.prompt("tool t1 execute ls\npermission t1", approver=approver,
                                              approval_timeout_s=600))
    await asyncio.wait_for(asked.wait(), 10)
    os.kill(rt.pid, signal.SIGKILL)
    async with asyncio.timeout(10):  # a hang guard: the approval would otherwise wait 600 s
        with pytest.raises(AcpProcessDied):
            await turn
    assert question_cancelled.is_set()
