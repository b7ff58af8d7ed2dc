"""The pool's lifecycle edges: reaping never takes a runtime with a request in flight, an agent
that never answers initialize spends the respawn budget, a closed pool stays closed, and a
session already served is never reloaded over its live handle."""

from __future__ import annotations

import asyncio

import pytest

from core.acp import AgentSpec
from core.acp.pool import RuntimePool
from core.acp.session_handle import AcpRequestTimeout, AcpRuntimeDead


async def test_the_reaper_never_takes_a_runtime_while_a_session_load_is_replaying(agent, tmp_path) -> None:
    spec = agent("--state-dir", str(tmp_path / "state"), "--load-delay", "0.15", "--load-replay", "6")
    async with RuntimePool(idle_s=0.1, request_timeout_s=5) as pool:
        runtime = await pool.acquire(spec)
        session = await runtime.new_session()
        await session.prompt("text remember me")
        runtime.forget(session.session_id)  # as after a restart: the agent must load it again
        async with asyncio.timeout(10):
            loaded = await runtime.load_session(session.session_id)  # ~1 s of replay, idle_s is 0.1
        assert runtime.alive and pool.runtimes() == [runtime]
        assert (await loaded.prompt("text still here")).text == "still here"


async def test_reloading_a_session_the_runtime_already_serves_keeps_the_live_handle(start, agent) -> None:
    runtime = await start(agent())
    session = await runtime.new_session()
    await session.prompt("text first")
    assert await runtime.load_session(session.session_id) is session
    assert (await session.prompt("text fine")).text == "fine"


async def test_a_failed_reload_leaves_the_live_session_working(start, agent) -> None:
    from core.acp.session_handle import AcpRequestTimeout

    runtime = await start(agent("--load-delay", "1", "--load-replay", "1"))
    session = await runtime.new_session()
    await session.prompt("text first")
    runtime.request_timeout_s = 0.2  # the replay's first frame comes later than this
    with pytest.raises(AcpRequestTimeout):
        await runtime.load_session(session.session_id)
    runtime.request_timeout_s = 10
    assert (await session.prompt("text still mine")).text == "still mine"  # events still reach it


async def test_an_agent_that_never_answers_initialize_spends_the_respawn_budget(tmp_path) -> None:
    silent = AgentSpec(name="silent", command="sleep", args=("30",), cwd=str(tmp_path))
    async with RuntimePool(request_timeout_s=0.3, respawn_budget=1) as pool:
        for _ in range(2):
            with pytest.raises(AcpRequestTimeout):
                await pool.acquire(silent)
        with pytest.raises(AcpRuntimeDead, match="not restarting it again"):
            await pool.acquire(silent)
        assert pool.spawned == 0


async def test_a_closed_pool_refuses_to_start_agents(agent) -> None:
    pool = RuntimePool()
    await pool.close()
    with pytest.raises(AcpRuntimeDead, match="shutting down"):
        await pool.acquire(agent())
    assert pool.runtimes() == []


async def test_closing_the_pool_while_the_reaper_stops_an_agent_still_stops_it(agent) -> None:
    import os

    spec = agent("--ignore-eof")  # slow to stop: stdin EOF is ignored, SIGTERM comes after a grace
    pool = RuntimePool(idle_s=3600)
    runtime = await pool.acquire(spec)
    pid = runtime.pid
    reaping = asyncio.create_task(pool.reap(now=float("inf")))
    await asyncio.sleep(0.05)  # the reaper has taken it out and is stopping it
    await pool.close()  # cancels the reaper mid-stop; the pool must finish the stop itself
    reaping.cancel()
    async with asyncio.timeout(10):
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            if not runtime.process.alive:
                break
            await asyncio.sleep(0.05)
    assert not runtime.process.alive
