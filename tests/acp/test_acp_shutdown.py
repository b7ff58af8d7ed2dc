"""The shutdown ladder: stdin EOF, SIGTERM, SIGKILL; nothing is left running."""

from __future__ import annotations

import asyncio
import os
import signal

import psutil
import pytest

from core.acp.runtime import AcpRuntime

HANG = 15.0


def _assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert pid not in {p.pid for p in psutil.Process().children(recursive=True)}


async def _started(agent, *flags: str) -> AcpRuntime:
    async with asyncio.timeout(HANG):
        rt = await AcpRuntime.start(agent(*flags))
        session = await rt.new_session()
        assert (await session.prompt("text up")).text == "up"
    return rt


async def test_polite_agent_exits_on_stdin_eof(agent) -> None:
    rt = await _started(agent)
    async with asyncio.timeout(HANG):
        await rt.close()
    assert rt.process.proc.returncode == 0
    assert not rt.alive
    _assert_gone(rt.pid)


async def test_agent_ignoring_eof_gets_sigterm(agent) -> None:
    rt = await _started(agent, "--ignore-eof")
    async with asyncio.timeout(HANG):
        code = await rt.process.stop(grace_s=0.3, term_s=5.0)
        await rt.close()
    assert code == -signal.SIGTERM
    _assert_gone(rt.pid)


async def test_agent_ignoring_eof_and_sigterm_gets_sigkill(agent) -> None:
    rt = await _started(agent, "--ignore-eof", "--ignore-sigterm")
    async with asyncio.timeout(HANG):
        code = await rt.process.stop(grace_s=0.3, term_s=0.3)
        await rt.close()
    assert code == -signal.SIGKILL
    _assert_gone(rt.pid)


async def test_close_with_a_turn_running_cancels_it_first(agent, events, recorder) -> None:
    rt = await _started(agent)
    session = next(iter(rt.sessions.values()))
    ev = events()
    turn = asyncio.create_task(session.prompt("text long job\nhang", on_event=ev))
    await ev.wait_text("long job")
    async with asyncio.timeout(HANG):
        await rt.close()
    assert (await turn).stop_reason == "cancelled"
    assert "session/cancel" in recorder.methods()
    _assert_gone(rt.pid)


async def test_close_of_the_default_ladder_reaches_sigterm(agent) -> None:
    """The real close() path (default grace) on an agent that ignores EOF, as claude/codex adapters do."""
    rt = await _started(agent, "--ignore-eof")
    async with asyncio.timeout(HANG):
        await rt.close()
    assert rt.process.proc.returncode == -signal.SIGTERM
    _assert_gone(rt.pid)
