"""Regressions of the ACP tier, each pinned on a real runtime driving the fake agent.

Every test here failed before its fix: a session timed out on a deaf agent not marked
unresponsive, a non-finite context percentage, a deeply nested JSON line killing the reader, a
closing runtime still reported alive, and credential arguments in the agent's start-up log line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Callable

import pytest

from core.acp.client import AcpTimeoutError
from core.acp.spec import AgentSpec
from core.acp.types import KiroMetadata
from tests.conftest import FAKE_AGENT_PATH

SECRET = "plainsecretvalue1"


async def test_a_timeout_the_agent_ignores_marks_the_session_unresponsive(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    with pytest.raises(AcpTimeoutError):
        await session.prompt("deaf still thinking", timeout_s=0.3, cancel_wait_s=0.2)
    assert session.unresponsive, "the agent never ended the turn: its session cannot take another prompt"


async def test_a_timeout_the_agent_honours_leaves_the_session_usable(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    with pytest.raises(AcpTimeoutError):
        await session.prompt("hang", timeout_s=0.3, cancel_wait_s=5.0)
    assert not session.unresponsive
    assert (await session.prompt("text still here")).text == "still here"


@pytest.mark.parametrize("value", ["1e400", "Infinity", "-Infinity", "NaN"])
async def test_a_non_finite_context_percentage_is_read_as_unknown(start, agent, events, value: str) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    sink = events()
    stats = await session.prompt(f'kiro_meta {{"contextUsagePercentage": {value}}}\ntext fine', on_event=sink)
    assert stats.text == "fine"
    assert stats.context_pct is None or math.isfinite(stats.context_pct)
    [meta] = sink.of(KiroMetadata)
    assert meta.context_pct is None, f"{value} is not a percentage"


async def test_a_deeply_nested_json_line_costs_that_line_not_the_runtime(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    for line in ("[" * 100_000, '{"jsonrpc":"2.0","method":"x","params":' + "[" * 100_000):
        stats = await session.prompt(f"text before\nraw {line}\ntext after")
        assert (stats.stop_reason, stats.text) == ("end_turn", "beforeafter")
        assert rt.alive
    assert (await session.prompt("text still here")).text == "still here"


async def test_a_runtime_is_not_alive_from_the_moment_it_starts_closing(start, agent) -> None:
    rt = await start(agent("--ignore-eof"))  # its close takes the stdin-EOF grace period at least
    await rt.new_session()
    assert rt.alive
    closing = asyncio.create_task(rt.close())
    await asyncio.sleep(0)  # close() has started, the process is still running
    assert rt.process.alive
    assert not rt.alive, "a runtime being closed (by the reaper) must never be picked up again"
    async with asyncio.timeout(15):
        await closing
    assert not rt.alive


def _wrapped(spec: AgentSpec, *extra: str) -> AgentSpec:
    """The fake agent started through ``python -c`` so that ``extra`` (arguments the fake does not
    know) appear in the command line but are dropped before the fake parses its own."""
    code = (f"import runpy, sys; sys.argv = [sys.argv[0]] + sys.argv[{1 + len(extra)}:]; "
            f"runpy.run_path({str(FAKE_AGENT_PATH)!r}, run_name='__main__')")
    return dataclasses.replace(spec, args=("-c", code, *extra, *spec.args[1:]))


async def test_the_agent_start_log_line_masks_credential_arguments(
        start, fake_agent_spec: Callable[..., AgentSpec], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="acp_relay.acp.process")
    spec = _wrapped(fake_agent_spec(), "--api-key", SECRET, f"--token={SECRET}")
    rt = await start(spec)
    session = await rt.new_session()
    assert (await session.prompt("text works")).text == "works", "the wrapped agent really runs"
    started = [r.getMessage() for r in caplog.records if "started agent" in r.getMessage()]
    assert started and "--api-key" in started[0] and "--token=" in started[0], started
    assert SECRET not in caplog.text
