"""Idle sessions are let go (issue 24): a runtime keeps no handle for a session nothing used for
``idle_s``, tells the agent with ``session/close`` where it offers that, and a later ``session/load``
reattaches the same session. Reaching a sweep is simulated by passing ``now``, never by waiting."""

from __future__ import annotations

import asyncio
import time

import pytest

from core.acp.client import AcpError
from core.failures import is_session_lost

LATER = 3600.0  # past any idle_s used here


def _closed(recorder) -> list[str]:
    return [f["params"]["sessionId"] for f in recorder.frames() if f.get("method") == "session/close"]


async def test_a_session_idle_past_idle_s_is_closed_and_reattached_by_load(start, agent, recorder) -> None:
    rt = await start(agent("--close"))
    assert rt.close_supported
    session = await rt.new_session()
    assert (await session.prompt("text first")).text == "first"
    assert await rt.close_idle_sessions(60.0) == 0, "used just now: kept"

    assert await rt.close_idle_sessions(60.0, now=time.monotonic() + LATER) == 1
    assert session.session_id not in rt.sessions
    assert _closed(recorder) == [session.session_id], "the agent was told, so it frees the session too"
    with pytest.raises(AcpError) as info:  # the agent really closed it: the old handle is refused
        await session.prompt("text on the closed session")
    assert is_session_lost(info.value)

    again = await rt.load_session(session.session_id)
    assert again.session_id == session.session_id and rt.sessions[session.session_id] is again
    assert (await again.prompt("text second")).text == "second"


async def test_a_busy_session_is_never_closed(start, agent, recorder, events) -> None:
    rt = await start(agent("--close"))
    busy, idle = await rt.new_session(), await rt.new_session()
    ev = events()
    turn = asyncio.create_task(busy.prompt("text working\nhang", on_event=ev))
    await ev.wait_text("working")
    assert await rt.close_idle_sessions(60.0, now=time.monotonic() + LATER) == 1
    assert set(rt.sessions) == {busy.session_id}
    assert _closed(recorder) == [idle.session_id]
    await busy.cancel()
    await turn


async def test_the_handles_stay_bounded_however_many_conversations_spoke(start, agent) -> None:
    rt = await start(agent("--close"))
    for i in range(40):
        session = await rt.new_session()
        assert (await session.prompt(f"text {i}")).text == str(i)
    assert len(rt.sessions) == 40
    assert await rt.close_idle_sessions(60.0, now=time.monotonic() + LATER) == 40
    assert rt.sessions == {}


async def test_an_agent_without_session_close_is_not_sent_it(start, agent, recorder) -> None:
    rt = await start(agent())
    assert not rt.close_supported
    session = await rt.new_session()
    await session.prompt("text hello")
    assert await rt.close_idle_sessions(60.0, now=time.monotonic() + LATER) == 1
    assert rt.sessions == {}
    assert "session/close" not in recorder.methods(), "a method the agent does not offer is never sent"
    again = await rt.load_session(session.session_id)
    assert (await again.prompt("text back")).text == "back"


async def test_an_agent_that_cannot_load_keeps_its_sessions(start, agent, recorder) -> None:
    # Letting one go would lose the conversation's context: nothing could reattach it.
    rt = await start(agent("--close", "--no-load"))
    session = await rt.new_session()
    await session.prompt("text hello")
    assert await rt.close_idle_sessions(60.0, now=time.monotonic() + LATER) == 0
    assert set(rt.sessions) == {session.session_id}
    assert _closed(recorder) == []
