"""Prompt turns: busy, cancel, timeouts, dying agents, Kiro's interrupt, error mapping."""

from __future__ import annotations

import asyncio
import json

import pytest

from core.acp.client import (
    AcpAuthRequired,
    AcpError,
    AcpProcessDied,
    AcpPromptBusy,
    AcpTimeoutError,
)
from core.acp.session_handle import AcpRuntimeDead
from core.acp.types import PermissionRequest, TextChunk, TurnEnded
from core.failures import classify

HANG = 15.0
NOT_LOGGED_IN = "error: You are not logged in, please log in with kiro-cli login"


async def _session(start, agent, *flags: str, **kw):
    rt = await start(agent(*flags, **kw))
    return rt, await rt.new_session()


async def test_second_concurrent_prompt_is_busy(start, agent, events) -> None:
    _, session = await _session(start, agent)
    ev = events()
    first = asyncio.create_task(session.prompt("text started\nhang", on_event=ev))
    await ev.wait_text("started")
    with pytest.raises(AcpPromptBusy):
        await session.prompt("text second")
    assert session.busy
    await session.cancel()
    assert (await first).stop_reason == "cancelled"
    assert (await session.prompt("text free again")).text == "free again"


async def test_agent_side_busy_error_maps_to_prompt_busy(start, agent) -> None:
    _, session = await _session(start, agent)
    with pytest.raises(AcpPromptBusy) as info:
        await session.prompt('error_data -32603 {"message": "Prompt already in progress", '
                             '"data": "Prompt already in progress"}')
    assert classify(info.value).kind == "prompt_busy"


async def test_cancel_returns_after_the_turn_ended(start, agent, events, recorder) -> None:
    _, session = await _session(start, agent)
    ev = events()
    turn = asyncio.create_task(session.prompt("text working\nhang", on_event=ev))
    await ev.wait_text("working")
    async with asyncio.timeout(HANG):
        await session.cancel()
    assert turn.done()
    assert not session.busy
    stats = turn.result()
    assert stats.stop_reason == "cancelled"
    assert stats.text == "working"
    assert ev.items[-1] == TurnEnded("cancelled")
    cancel = await recorder.wait_frame(lambda f: f.get("method") == "session/cancel")
    assert cancel["params"] == {"sessionId": session.session_id}


async def test_cancel_without_a_turn_is_a_no_op(start, agent, recorder) -> None:
    _, session = await _session(start, agent)
    await session.cancel()
    assert "session/cancel" not in recorder.methods()


async def test_cancel_during_pending_permission_answers_it_cancelled(start, agent, events, recorder) -> None:
    _, session = await _session(start, agent, tool_gate="ask")
    asked = asyncio.Event()

    async def approver(request: PermissionRequest) -> str:
        asked.set()
        await asyncio.Event().wait()  # never decides
        return "allow_once"

    ev = events()
    turn = asyncio.create_task(session.prompt("tool t1 execute rm -rf build\npermission t1\ntext after",
                                              on_event=ev, approver=approver))
    async with asyncio.timeout(HANG):
        await asked.wait()
    await session.cancel()
    stats = await turn
    assert stats.stop_reason == "cancelled"
    assert "after" not in stats.text
    answer = await recorder.wait_frame(lambda f: "result" in f and "outcome" in (f["result"] or {}))
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}


async def test_approver_saying_cancelled_answers_cancelled(start, agent) -> None:
    _, session = await _session(start, agent, tool_gate="ask")

    async def approver(request: PermissionRequest) -> str:
        return "cancelled"

    stats = await session.prompt("tool t1 execute ls\npermission t1", approver=approver)
    assert stats.text == "permission:cancelled:-"


async def test_prompt_timeout_keeps_partial_output_and_cancels(start, agent, recorder) -> None:
    _, session = await _session(start, agent)
    with pytest.raises(AcpTimeoutError) as info:
        await session.prompt("text partial answer\nhang", timeout_s=0.3)
    exc = info.value
    assert exc.partial_output == "partial answer"
    assert exc.transient is True
    assert classify(exc).kind == "timeout"
    # We waited for the agent to end the turn after session/cancel, so it has already recorded it.
    assert recorder.methods().count("session/cancel") == 1
    assert not session.busy
    assert (await session.prompt("text next")).text == "next"


async def test_agent_dying_mid_turn(start, agent, events) -> None:
    rt, session = await _session(start, agent)
    ev = events()
    with pytest.raises(AcpProcessDied) as info:
        await session.prompt("text last words\ndie 3", on_event=ev)
    exc = info.value
    assert exc.exit_code == 3
    assert "fatal: dying as scripted" in exc.stderr_tail
    assert exc.partial_output == "last words"
    assert exc.transient is True
    verdict = classify(exc)
    assert verdict.kind == "process_died"
    assert "exit code 3" in verdict.prose and "fatal: dying as scripted" in verdict.prose
    assert not rt.alive
    with pytest.raises(AcpRuntimeDead) as dead:
        await rt.new_session()
    assert dead.value.exit_code == 3
    with pytest.raises(AcpRuntimeDead):
        await session.set_mode("plan")
    with pytest.raises((AcpProcessDied, AcpRuntimeDead)):
        await session.prompt("text anyone?")


async def test_kiro_interrupt_ends_the_turn_without_a_response(start, agent, events) -> None:
    _, session = await _session(start, agent, "--kiro", backend="kiro")
    ev = events()
    stats = await session.prompt("text working on it\nkiro_interrupt", on_event=ev)
    assert stats.stop_reason == "end_turn"
    assert stats.text == "working on it"
    assert [e.text for e in ev.of(TextChunk)] == ["working on it"]  # the marker chunk is not shown
    assert ev.items[-1] == TurnEnded("end_turn")
    # The fake writes the marker chunk a moment before it frees its turn: retry while it says busy.
    async with asyncio.timeout(HANG):
        while True:
            try:
                stats = await session.prompt("text next")
                break
            except AcpPromptBusy:
                await asyncio.sleep(0.01)
    assert stats.text == "next"


async def test_the_kiro_interrupt_sentence_is_ordinary_text_for_other_agents(start, agent, events) -> None:
    _, session = await _session(start, agent, backend="generic")
    ev = events()
    stats = await session.prompt("text Tool uses were interrupted, waiting for the next user prompt\ntext more",
                                 on_event=ev)
    assert stats.stop_reason == "end_turn"  # the agent's own prompt response ended the turn
    assert stats.text.endswith("more")


@pytest.mark.parametrize(("data", "kind", "transient"), [
    ("Encountered an error in the response stream: ThrottlingException: Rate exceeded", "rate_limit", True),
    ("Encountered an error in the response stream: Improperly formed request. (request_id: abc123def456ghi)",
     "malformed", False),
    ({"message": "stream disconnected before completion", "codex_error_info": "other"}, "stream_timeout", True),
    ({"message": "unexpected status 401 Unauthorized: invalid x-api-key"}, "auth", False),
])
async def test_internal_error_carries_code_data_and_verdict(start, agent, data, kind: str,
                                                           transient: bool) -> None:
    _, session = await _session(start, agent)
    payload = {"message": "Internal error", "data": data}
    with pytest.raises(AcpError) as info:
        await session.prompt(f"text oops\nerror_data -32603 {json.dumps(payload)}")
    exc = info.value
    assert exc.rpc_code == -32603
    assert exc.data == data
    assert exc.transient is transient
    assert exc.partial_output == "oops"
    verdict = classify(exc)
    assert (verdict.kind, verdict.transient) == (kind, transient)
    if kind == "auth":
        assert isinstance(exc, AcpAuthRequired)
    assert not session.busy


async def test_minus_32000_without_error_type_is_auth_required(start, agent) -> None:
    _, session = await _session(start, agent)
    with pytest.raises(AcpAuthRequired) as info:
        await session.prompt("error -32000 Authentication required")
    assert info.value.rpc_code == -32000
    assert classify(info.value).kind == "auth"


async def test_minus_32000_with_error_type_is_not_auth(start, agent) -> None:
    _, session = await _session(start, agent, "--kiro", backend="kiro")
    payload = {"message": "Invalid request", "data": {"errorType": "ValidationException",
                                                      "message": "Field prompt is invalid"}}
    with pytest.raises(AcpError) as info:
        await session.prompt(f"error_data -32000 {json.dumps(payload)}")
    assert not isinstance(info.value, AcpAuthRequired)
    assert info.value.rpc_code == -32000
    assert classify(info.value, backend="kiro").kind != "auth"


async def test_not_logged_in_uses_kiros_own_line(agent) -> None:
    from core.acp.runtime import AcpRuntime

    with pytest.raises(AcpAuthRequired) as info:
        async with asyncio.timeout(HANG):
            await AcpRuntime.start(agent("--not-logged-in", backend="kiro"))
    exc = info.value
    assert exc.agent_line == NOT_LOGGED_IN
    assert exc.transient is False
    assert "kiro-cli login" in classify(exc, backend="kiro").prose


async def test_consumer_failure_ends_the_turn(start, agent, recorder) -> None:
    _, session = await _session(start, agent)

    def explode(event: object) -> None:
        raise RuntimeError("consumer broke")

    with pytest.raises(RuntimeError, match="consumer broke"):
        await session.prompt("text one\nhang", on_event=explode)
    assert "session/cancel" in recorder.methods()
    assert not session.busy


async def test_caller_cancelled_ends_the_agents_turn(start, agent, events, recorder) -> None:
    _, session = await _session(start, agent)
    ev = events()
    turn = asyncio.create_task(session.prompt("text go\nhang", on_event=ev))
    await ev.wait_text("go")
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    await recorder.wait_frame(lambda f: f.get("method") == "session/cancel")
    assert not session.busy
