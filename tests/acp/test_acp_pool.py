"""RuntimePool: sharing per (agent, cwd), workspace binding, reaping, respawn budget."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.acp.client import AcpAuthRequired, AcpProcessDied, AcpToolGateUnroutable
from core.acp.pool import RuntimePool
from core.acp.runtime import AcpWorkspaceBindingError
from core.acp.session_handle import AcpRuntimeDead
from core.acp.spec import AgentSpec
from core.failures import classify

HANG = 15.0


@pytest.fixture
async def pool() -> AsyncIterator[RuntimePool]:
    async with RuntimePool(respawn_budget=1, request_timeout_s=10.0) as p:
        yield p


def _gone(pid: int) -> bool:
    try:
        import os

        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_one_runtime_per_agent_and_cwd(pool: RuntimePool, agent, tmp_path: Path) -> None:
    spec = agent()
    rt = await pool.acquire(spec)
    again = await pool.acquire(spec)
    assert again is rt
    a, b = await rt.new_session(), await again.new_session()
    assert a.session_id != b.session_id
    assert a.runtime.pid == b.runtime.pid
    assert set(rt.sessions) == {a.session_id, b.session_id}
    # both sessions run turns concurrently on the one process
    sa, sb = await asyncio.gather(a.prompt("text from a"), b.prompt("text from b"))
    assert (sa.text, sb.text) == ("from a", "from b")
    assert pool.spawned == 1


async def test_another_cwd_gets_another_runtime(pool: RuntimePool, agent, tmp_path: Path) -> None:
    spec = agent()
    other = tmp_path / "other"
    other.mkdir()
    rt = await pool.acquire(spec)
    rt_other = await pool.acquire(spec, cwd=str(other))
    assert rt_other is not rt
    assert rt_other.pid != rt.pid
    assert rt_other.cwd == str(other.resolve())
    assert await pool.acquire(spec, cwd=str(other)) is rt_other
    assert len(pool.runtimes()) == 2


async def test_a_folder_is_resolved_once_while_its_agent_runs(agent, tmp_path: Path) -> None:
    """A folder spelled through a symlink: a new conversation there is handed the agent already running
    for that spelling (as its earlier conversations keep their sessions there), without resolving the
    folder on disk again; once that agent is gone, the folder is resolved anew."""
    first, second, link = tmp_path / "first", tmp_path / "second", tmp_path / "link"
    first.mkdir()
    second.mkdir()
    link.symlink_to(first)
    async with RuntimePool(idle_s=60.0) as pool:
        spec = agent()
        rt = await pool.acquire(spec, cwd=str(link))
        assert rt.cwd == str(first.resolve())
        link.unlink()
        link.symlink_to(second)  # retargeted while the agent for "link" runs
        assert await pool.acquire(spec, cwd=str(link)) is rt
        assert pool.spawned == 1
        assert await pool.reap(now=time.monotonic() + 3600) == 1
        again = await pool.acquire(spec, cwd=str(link))
        assert again is not rt and again.cwd == str(second.resolve())
        assert pool.spawned == 2


async def test_runtime_is_bound_to_its_cwd(pool: RuntimePool, agent, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    rt = await pool.acquire(agent())
    assert (await rt.new_session(cwd=str(tmp_path))).session_id  # its own cwd is fine
    with pytest.raises(AcpWorkspaceBindingError) as info:
        await rt.new_session(cwd=str(other))
    assert info.value.transient is False
    assert classify(info.value).kind == "workspace_binding"
    with pytest.raises(AcpWorkspaceBindingError):
        await rt.load_session("whatever", cwd=str(other))


async def test_idle_runtimes_are_reaped(agent) -> None:
    async with RuntimePool(idle_s=60.0) as pool:
        rt = await pool.acquire(agent())
        assert await pool.reap() == 0  # not idle yet
        assert await pool.reap(now=time.monotonic() + 3600) == 1
        assert pool.runtimes() == []
        assert not rt.alive
        assert _gone(rt.pid)
        fresh = await pool.acquire(agent())
        assert fresh is not rt and fresh.alive


async def test_busy_runtime_is_not_reaped(agent, events) -> None:
    async with RuntimePool(idle_s=60.0) as pool:
        rt = await pool.acquire(agent())
        session = await rt.new_session()
        ev = events()
        turn = asyncio.create_task(session.prompt("text busy\nhang", on_event=ev))
        await ev.wait_text("busy")
        assert await pool.reap(now=time.monotonic() + 3600) == 0
        await session.cancel()
        await turn
        assert await pool.reap(now=time.monotonic() + 3600) == 1


async def _kill_via_turn(rt) -> None:
    session = await rt.new_session()
    with pytest.raises(AcpProcessDied):
        await session.prompt("die 7")
    assert not rt.alive


async def test_dead_runtime_is_replaced_while_the_budget_lasts(pool: RuntimePool, agent) -> None:
    spec = agent()
    first = await pool.acquire(spec)
    await _kill_via_turn(first)
    second = await pool.acquire(spec)  # one respawn allowed
    assert second is not first
    assert second.pid != first.pid
    assert (await (await second.new_session()).prompt("text back")).text == "back"
    await _kill_via_turn(second)
    with pytest.raises(AcpRuntimeDead) as info:
        await pool.acquire(spec)
    assert info.value.exit_code == 7
    assert "fatal: dying as scripted" in info.value.stderr_tail
    with pytest.raises(AcpRuntimeDead):  # still refused: the window has not passed
        await pool.acquire(spec)
    assert pool.spawned == 2


async def test_auth_required_never_spends_the_budget(pool: RuntimePool, agent) -> None:
    spec = agent("--not-logged-in", backend="kiro", record=False)
    for _ in range(4):
        with pytest.raises(AcpAuthRequired) as info:
            async with asyncio.timeout(HANG):
                await pool.acquire(spec)
        assert "not logged in" in info.value.agent_line
    assert pool.spawned == 0
    assert pool.runtimes() == []


async def test_tool_gate_unroutable_never_spends_the_budget(pool: RuntimePool, tmp_path: Path) -> None:
    spec = AgentSpec(name="kiro", command=str(tmp_path / "kiro-cli"), args=("acp", "--trust-all-tools"),
                     cwd=str(tmp_path), tool_gate="ask")
    for _ in range(4):
        with pytest.raises(AcpToolGateUnroutable):
            await pool.acquire(spec)
    assert pool.spawned == 0


async def test_pool_close_stops_every_agent(agent, tmp_path: Path) -> None:
    other = tmp_path / "o"
    other.mkdir()
    pool = RuntimePool()
    a = await pool.acquire(agent())
    b = await pool.acquire(agent(), cwd=str(other))
    await pool.close()
    assert pool.runtimes() == []
    assert _gone(a.pid) and _gone(b.pid)


async def test_crash_at_startup_spends_the_budget_too(pool: RuntimePool, tmp_path: Path) -> None:
    import sys

    spec = AgentSpec(name="crashy", command=sys.executable,
                     args=("-c", "import sys; sys.stderr.write('boom at start\\n'); sys.exit(5)"),
                     cwd=str(tmp_path))
    for _ in range(2):  # the first start and the one respawn the budget allows
        with pytest.raises(AcpProcessDied) as info:
            await pool.acquire(spec)
        assert info.value.exit_code == 5
        assert "boom at start" in info.value.stderr_tail
    with pytest.raises(AcpRuntimeDead):  # then refused without spawning again
        await pool.acquire(spec)
