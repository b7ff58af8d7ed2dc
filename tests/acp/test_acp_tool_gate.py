"""The PreToolUse gate: allow, deny, ask (approver, timeout, none) and Kiro trust flags."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core.acp.client import AcpPermissionNeeded, AcpToolGateUnroutable
from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.acp.tool_gate import ToolGateUnroutable
from core.acp.types import PermissionOption, PermissionRequest, ToolCall
from core.failures import classify

SCRIPT = "tool t1 execute Delete the build dir\npermission t1"


async def _session(start, agent, gate: str):
    rt = await start(agent(tool_gate=gate))
    return await rt.new_session()


async def test_allow_answers_the_allow_once_option(start, agent, recorder, events) -> None:
    session = await _session(start, agent, "allow")
    ev = events()
    stats = await session.prompt(SCRIPT, on_event=ev)
    assert stats.text == "permission:selected:allow-once"
    assert stats.tool_ran is True
    assert ev.of(ToolCall)[-1].status == "completed"
    answer = await recorder.wait_frame(lambda f: "result" in f and "outcome" in (f["result"] or {}))
    assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "allow-once"}}


async def test_deny_answers_the_reject_once_option(start, agent, events) -> None:
    session = await _session(start, agent, "deny")
    ev = events()
    stats = await session.prompt(SCRIPT, on_event=ev)
    assert stats.text == "permission:selected:reject"
    assert stats.tool_ran is True  # the failed tool_call_update still counts as having reached the tool
    # The agent reports the call "failed"; it never ran: the relay denied it (issue 18: a person's own
    # denial read "(failed)").
    assert ev.of(ToolCall)[-1].status == "denied"


@pytest.mark.parametrize(("decision", "chosen"), [
    # "Allow for this session" is the relay's to remember (one command, one path): the agent is
    # answered allow_once, so it asks again and the relay decides what the person's choice covers.
    ("allow_once", "allow-once"), ("allow_always", "allow-once"), ("reject_once", "reject"),
    ("reject_always", "reject"),  # no reject_always option offered: falls back to reject_once
])
async def test_ask_calls_the_approver(start, agent, decision: str, chosen: str) -> None:
    session = await _session(start, agent, "ask")
    seen: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> str:
        seen.append(request)
        return decision

    stats = await session.prompt(SCRIPT, approver=approver)
    assert stats.text == f"permission:selected:{chosen}"
    [request] = seen
    assert request.session_id == session.session_id
    assert request.tool_call.tool_call_id == "t1"
    assert request.tool_call.title == "Delete the build dir"
    assert request.tool_call.kind == "execute"
    assert [o.kind for o in request.options] == ["allow_once", "allow_always", "reject_once"]
    assert request.option_for("allow_always") == PermissionOption("allow-always", "Always Allow", "allow_always")
    assert request.answered.is_set()  # set once our answer was written


async def test_approver_timeout_rejects(start, agent) -> None:
    session = await _session(start, agent, "ask")
    cancelled = asyncio.Event()

    async def approver(request: PermissionRequest) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "allow_once"

    stats = await session.prompt(SCRIPT, approver=approver, approval_timeout_s=0.2)
    assert stats.text == "permission:selected:reject"
    assert stats.stop_reason == "end_turn"
    assert cancelled.is_set()  # the approver was told to stop asking


async def test_ask_without_approver_raises_permission_needed(start, agent, recorder) -> None:
    session = await _session(start, agent, "ask")
    with pytest.raises(AcpPermissionNeeded) as info:
        await session.prompt(SCRIPT + "\ntext never")
    exc = info.value
    assert exc.tool_title == "Delete the build dir"
    assert exc.tool_kind == "execute"
    verdict = classify(exc)
    assert verdict.kind == "permission_needed" and verdict.transient is False
    assert "session/cancel" in recorder.methods()
    assert not session.busy


async def test_approver_failure_ends_the_turn(start, agent) -> None:
    session = await _session(start, agent, "ask")

    async def approver(request: PermissionRequest) -> str:
        raise RuntimeError("approval surface went away")

    with pytest.raises(RuntimeError, match="approval surface went away"):
        async with asyncio.timeout(15):
            await session.prompt(SCRIPT, approver=approver)


TRUST_FLAGS = [("acp", "-a"), ("acp", "--trust-all-tools"), ("acp", "--trust-tools=fs_read,fs_write"),
               ("acp", "--trust-tools", "fs_read")]


@pytest.mark.parametrize("gate", ["ask", "deny"])
@pytest.mark.parametrize("args", TRUST_FLAGS, ids=lambda a: a[1])
async def test_kiro_trust_flags_are_refused_before_spawning(tmp_path: Path, gate: str,
                                                             args: tuple[str, ...]) -> None:
    # The command does not exist: getting AcpToolGateUnroutable (not "not found") proves no spawn.
    spec = AgentSpec(name="kiro", command=str(tmp_path / "kiro-cli"), args=args, cwd=str(tmp_path),
                     tool_gate=gate)
    with pytest.raises(AcpToolGateUnroutable) as info:
        await AcpRuntime.start(spec)
    exc = info.value
    assert isinstance(exc.__cause__, ToolGateUnroutable)
    assert exc.data["flag"] == args[1]
    assert exc.data["tool_gate"] == gate
    verdict = classify(exc, backend="kiro")
    assert verdict.kind == "tool_gate" and verdict.transient is False
    assert "agents.kiro.tool_gate" in verdict.prose


async def test_kiro_trust_flag_with_gate_allow_is_fine(tmp_path: Path) -> None:
    spec = AgentSpec(name="kiro", command=str(tmp_path / "kiro-cli"), args=("acp", "-a"), cwd=str(tmp_path),
                     tool_gate="allow")
    with pytest.raises(Exception) as info:
        await AcpRuntime.start(spec)
    assert not isinstance(info.value, AcpToolGateUnroutable)
    assert info.value.data["kind"] == "agent_missing"


async def test_trust_flag_like_args_of_other_backends_are_not_kiros(tmp_path: Path) -> None:
    spec = AgentSpec(name="other", command=str(tmp_path / "some-agent"), args=("-a",), cwd=str(tmp_path),
                     tool_gate="ask")
    with pytest.raises(Exception) as info:
        await AcpRuntime.start(spec)
    assert info.value.data["kind"] == "agent_missing"
