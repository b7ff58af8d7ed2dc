"""A gate of ask or deny is enforced, not hoped for (issue 17): a side-effecting tool that runs without a
permission request stops the turn, and a mode or option the agent switches itself into that stops it
asking is switched back mid-turn, or the turn is refused."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from core.acp.client import AcpToolGateUnroutable
from core.acp.types import PermissionRequest, ToolCall
from core.failures import classify

COPILOT = "https://agentclientprotocol.com/protocol/session-modes#"


async def _session(start, agent, *flags: str, gate: str = "ask"):
    return await (await start(agent(*flags, tool_gate=gate))).new_session()


@contextlib.asynccontextmanager
async def _running(session, script: str, **kw: Any) -> AsyncIterator[asyncio.Task[Any]]:
    """A turn running in the background for the body's duration; then stopped (and awaited)."""
    turn = asyncio.create_task(session.prompt(script, **kw))
    try:
        yield turn
    finally:
        await session.cancel(wait_s=5)
        await asyncio.wait({turn}, timeout=5)


@pytest.mark.parametrize("gate", ["ask", "deny"])
@pytest.mark.parametrize("kind", ["execute", "edit", "delete", "move", "fetch", "other", "-"])
async def test_a_side_effecting_tool_run_without_asking_stops_the_turn(
        start, agent, recorder, events, gate: str, kind: str) -> None:
    session = await _session(start, agent, gate=gate)
    ev = events()
    # `hang` waits for session/cancel: without the backstop this turn would never end by itself.
    with pytest.raises(AcpToolGateUnroutable) as info:
        async with asyncio.timeout(10):
            await session.prompt(f"run t1 {kind} rm -rf build\nhang\ntext never", on_event=ev)
    assert "session/cancel" in recorder.methods()
    exc = info.value
    assert exc.data["tool"] == "rm -rf build" and exc.data["tool_gate"] == gate
    assert exc.data["kind"] == ("other" if kind == "-" else kind)  # a missing kind counts as other
    assert "never" not in ev.text
    assert any(c.ran for c in ev.of(ToolCall)), "the tool line still shows that it ran"
    verdict = classify(exc)
    assert verdict.kind == "tool_gate" and verdict.transient is False
    assert "rm -rf build" in verdict.prose and "without asking" in verdict.prose
    assert f"agents.fake.tool_gate is '{gate}'" in verdict.prose
    assert not session.busy


@pytest.mark.parametrize("kind", ["read", "search", "think"])
async def test_a_read_only_tool_run_without_asking_passes(start, agent, kind: str) -> None:
    session = await _session(start, agent)
    stats = await session.prompt(f"run t1 {kind} look around\ntext fine")
    assert stats.text == "fine" and stats.stop_reason == "end_turn"


async def test_with_a_gate_of_allow_a_tool_run_without_asking_passes(start, agent) -> None:
    session = await _session(start, agent, gate="allow")
    stats = await session.prompt("run t1 execute rm -rf build\ntext fine")
    assert stats.text == "fine"


async def test_a_tool_announced_as_running_before_its_permission_request_is_not_a_bypass(start, agent) -> None:
    # codex-acp 2.x sends tool_call with status in_progress, THEN asks (captures/codex-new-mock-tool-allow).
    session = await _session(start, agent)
    announce = json.dumps({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "echo hi", "kind": "execute",
                           "status": "in_progress"})

    async def allow(request: PermissionRequest) -> str:
        return "allow_once"

    stats = await session.prompt(f"update {announce}\npermission c1\ntext fine", approver=allow)
    assert stats.text == "permission:selected:allow-oncefine"


async def test_a_tool_announced_as_running_that_then_completes_unasked_is_a_bypass(start, agent) -> None:
    session = await _session(start, agent)
    announce = json.dumps({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "echo hi", "kind": "execute",
                           "status": "in_progress"})
    with pytest.raises(AcpToolGateUnroutable):
        async with asyncio.timeout(10):
            await session.prompt(f"update {announce}\ntool_update c1 completed\nhang")


# -- modes and options the agent switches itself into ------------------------------------------


async def test_an_agent_that_switches_itself_into_auto_mid_turn_is_switched_back_at_once(
        start, agent, recorder, events) -> None:
    session = await _session(start, agent)
    ev = events()
    # The turn is still running (it hangs until cancelled): the switch back happens within it.
    async with _running(session, "mode auto\nhang", on_event=ev) as turn:
        await recorder.wait_frame(lambda f: f.get("method") == "session/set_mode", timeout=5)
        assert session.current_mode == "default"
    assert turn.result().stop_reason == "cancelled"
    modes = [f["params"]["modeId"] for f in recorder.frames() if f.get("method") == "session/set_mode"]
    assert modes == ["default"]


async def test_copilot_turning_allow_all_on_by_itself_is_turned_off_mid_turn(start, agent, recorder) -> None:
    session = await _session(start, agent, "--copilot")
    async with _running(session, "allow_all on\nhang"):
        frame = await recorder.wait_frame(lambda f: f.get("method") == "session/set_config_option", timeout=5)
    assert (frame["params"]["configId"], frame["params"]["value"]) == ("allow_all", "off")
    assert session.config_options["allow_all"]["currentValue"] == "off"


async def test_copilot_turning_allow_all_on_after_its_turn_ended_is_turned_off_at_once(
        start, agent, recorder) -> None:
    # Copilot 1.0.102's `/allow-all on` answers the turn first and reports the option after it: with no
    # turn in flight, the switch back must not wait for the next turn (the person reads the agent's
    # "All permissions are now enabled" and may walk away).
    session = await _session(start, agent, "--copilot")
    await session.prompt("allow_all_after on")
    frame = await recorder.wait_frame(lambda f: f.get("method") == "session/set_config_option", timeout=5)
    assert (frame["params"]["configId"], frame["params"]["value"]) == ("allow_all", "off")
    stats = await session.prompt("text next")
    assert stats.text == "next"
    switches = [f for f in recorder.frames() if f.get("method") == "session/set_config_option"]
    assert len(switches) == 1, "switched back once, not again before the next turn"
    assert session.config_options["allow_all"]["currentValue"] == "off"


async def test_copilot_switching_itself_to_autopilot_is_switched_back_to_agent(start, agent, recorder) -> None:
    session = await _session(start, agent, "--copilot")
    assert session.current_mode == COPILOT + "agent"
    stats = await session.prompt(f"mode {COPILOT}autopilot\ntext planned")
    assert stats.text == "planned"
    assert session.current_mode == COPILOT + "agent"
    methods = [f for f in recorder.frames() if f.get("method") in ("session/set_mode", "session/set_config_option")]
    assert [f["method"] for f in methods] == ["session/set_mode"], "switched back once, not twice"
    assert methods[0]["params"]["modeId"] == COPILOT + "agent"


async def test_copilot_plan_and_agent_modes_are_left_alone(start, agent, recorder) -> None:
    session = await _session(start, agent, "--copilot")
    await session.set_mode(COPILOT + "plan")
    await session.prompt(f"mode {COPILOT}agent\ntext ok")
    modes = [f["params"]["modeId"] for f in recorder.frames() if f.get("method") == "session/set_mode"]
    assert modes == [COPILOT + "plan"]
    with pytest.raises(AcpToolGateUnroutable):
        await session.set_mode(COPILOT + "autopilot")


async def test_an_agent_that_cannot_be_switched_back_has_its_turn_refused(start, agent) -> None:
    session = await _session(start, agent, "--locked-modes")
    with pytest.raises(AcpToolGateUnroutable) as info:
        async with asyncio.timeout(10):
            await session.prompt("mode yolo\nhang")
    prose = classify(info.value).prose
    assert "yolo" in prose and "switched itself" in prose and "agents.fake.tool_gate" in prose


async def test_a_permissions_option_with_no_asking_value_refuses_the_turn(start, agent) -> None:
    stuck = json.dumps({"sessionUpdate": "config_option_update", "configOptions": [
        {"id": "trust", "name": "Trust", "category": "permissions", "type": "select", "currentValue": "on",
         "options": [{"value": "on", "name": "On"}]}]})
    session = await _session(start, agent)
    with pytest.raises(AcpToolGateUnroutable) as info:
        async with asyncio.timeout(10):
            await session.prompt(f"update {stuck}\nhang")
    assert "trust" in classify(info.value).prose


async def test_with_a_gate_of_allow_the_agent_may_switch_itself(start, agent, recorder) -> None:
    session = await _session(start, agent, "--copilot", gate="allow")
    await session.prompt(f"allow_all on\nmode {COPILOT}autopilot\ntext ok")
    assert "session/set_config_option" not in recorder.methods()
    assert "session/set_mode" not in recorder.methods()
