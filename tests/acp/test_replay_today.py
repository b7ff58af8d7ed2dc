"""Recorded sessions of the agents people install today (tests/fixtures/captures), replayed through
our stack: codex-acp 2.6.0 (failed model calls end end_turn after a systemError thread status),
claude-agent-acp 0.23.1 (an empty end_turn answers a prompt retried after a 429), gemini-cli 0.61.0
in ACP mode (the gemini backend). Recorded by the peer tier (tests/peers/record.py)."""

from __future__ import annotations

import asyncio
import io
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from core.acp.client import AcpAuthRequired, AcpError
from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.acp.types import PermissionRequest, TextChunk, ToolCall, TurnEnded
from core.ask import run_ask
from core.failures import classify
from core.retry import RetryPolicy
from tests.acp.test_replay import CAPTURES, HANG, REPLAY_AGENT, Replayed, recorded_chunks
from tests.fakes.acp_schema import validate_record_file

Replay = Callable[..., Awaitable[Replayed]]


def _spec(capture: str, tmp_path: Path, record: Path) -> AgentSpec:
    return AgentSpec(name="replayed", command=sys.executable,
                     args=(str(REPLAY_AGENT), str(CAPTURES / capture), "--record", str(record)),
                     cwd=str(tmp_path), backend="", tool_gate="ask")  # the backend is detected


@pytest.fixture
async def replay(tmp_path: Path) -> AsyncIterator[Replay]:
    started: list[Replayed] = []

    async def run(capture: str) -> Replayed:
        record = tmp_path / f"{capture}.client.jsonl"
        async with asyncio.timeout(HANG):
            runtime = await AcpRuntime.start(_spec(capture, tmp_path, record))
        started.append(Replayed(runtime, record))
        return started[-1]

    yield run
    for replayed in started:
        await replayed.runtime.close()
        validate_record_file(replayed.record)  # what our client sent is valid ACP


async def test_codex_2_6_text_turn_after_leaving_its_auto_review_mode(replay: Replay, events) -> None:
    rp = await replay("codex-new-mock-text.jsonl")
    assert rp.runtime.backend == "codex", "detected from agentInfo.name @agentclientprotocol/codex-acp"
    session = await rp.runtime.new_session()
    assert session.current_mode == "read-only", "codex 2.6 starts in 'agent': a model, not the person, approves"
    ev = events()
    async with asyncio.timeout(HANG):
        stats = await session.prompt("say hi", on_event=ev)
    recorded = "".join(recorded_chunks("codex-new-mock-text.jsonl"))
    assert stats.text == ev.text == recorded == "Hello from the loopback mock."
    assert stats.stop_reason == "end_turn"
    modes = [f["params"]["modeId"] for f in rp.client_frames() if f.get("method") == "session/set_mode"]
    assert modes == ["read-only"]


@pytest.mark.parametrize(("capture", "kind", "transient"), [
    ("codex-new-mock-429.jsonl", "rate_limit", True),
    ("codex-new-mock-400.jsonl", "malformed", False),
])
async def test_codex_2_6_failed_model_call_is_an_error_not_an_answer(replay: Replay, events, capture: str,
                                                                      kind: str, transient: bool) -> None:
    recorded = "".join(recorded_chunks(capture))
    assert recorded.strip(), "the capture streams the provider's text as the answer"
    rp = await replay(capture)
    session = await rp.runtime.new_session()
    ev = events()
    with pytest.raises(AcpError) as info:
        async with asyncio.timeout(HANG):
            await session.prompt("say hi", on_event=ev)
    verdict = classify(info.value, backend="codex")
    assert (verdict.kind, verdict.transient, info.value.transient) == (kind, transient, transient)
    assert ev.text == "" and info.value.partial_output == "", "the raw text never became the answer"
    assert not ev.of(TurnEnded)
    assert "{" not in verdict.prose and "req_mock" not in verdict.prose


async def test_codex_2_6_401_is_auth_required(replay: Replay) -> None:
    rp = await replay("codex-new-mock-401.jsonl")
    session = await rp.runtime.new_session()
    with pytest.raises(AcpAuthRequired):
        async with asyncio.timeout(HANG):
            await session.prompt("say hi")


@pytest.mark.parametrize("capture", ["codex-new-mock-hang.jsonl", "gemini-mock-hang.jsonl"])
async def test_a_cancel_of_a_hung_model_call_ends_the_turn_cancelled(replay: Replay, capture: str) -> None:
    rp = await replay(capture)
    session = await rp.runtime.new_session()
    turn = asyncio.create_task(session.prompt("say hi"))
    async with asyncio.timeout(HANG):
        while not any(f.get("method") == "session/prompt" for f in rp.client_frames()):
            await asyncio.sleep(0.01)
        await session.cancel()
    assert turn.result().stop_reason == "cancelled"
    assert not session.unresponsive


async def test_codex_2_6_tool_permission_goes_to_the_approver(replay: Replay, events) -> None:
    rp = await replay("codex-new-mock-tool-allow.jsonl")
    session = await rp.runtime.new_session()
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> str:
        asked.append(request)
        return "allow_once"

    ev = events()
    async with asyncio.timeout(HANG):
        stats = await session.prompt("write the marker file", on_event=ev, approver=approver)
    [request] = asked
    assert request.tool_call.kind == "execute" and "marker.txt" in request.tool_call.title
    assert {o.kind for o in request.options} >= {"allow_once", "reject_once"}
    assert stats.tool_ran and stats.stop_reason == "end_turn" and stats.text.endswith("done")
    assert ev.of(ToolCall)[-1].status == "completed"


async def test_claude_0_23_empty_answers_to_retries_end_in_the_rate_limit_prose(tmp_path: Path) -> None:
    """The capture: a 429 error, then end_turn with zero usage and nothing else for each retry."""
    record = tmp_path / "client.jsonl"
    out, err = io.StringIO(), io.StringIO()
    async with asyncio.timeout(HANG):
        code = await run_ask(_spec("claude-zed-mock-429-retried.jsonl", tmp_path, record), "say hi",
                             timeout_s=HANG, request_timeout_s=HANG, approval_s=HANG,
                             policy=RetryPolicy(attempts=3, budget_s=10, base_delay_s=0.01), out=out, err=err)
    prompts = [f for f in validate_record_file(record) if f.get("method") == "session/prompt"]
    assert (code, out.getvalue(), len(prompts)) == (1, "", 3)
    assert "rate-limiting" in err.getvalue().strip().splitlines()[-1]
    assert "finished without writing a reply" not in err.getvalue()


async def test_claude_0_23_refusal_keeps_only_what_the_provider_said(replay: Replay, events) -> None:
    rp = await replay("claude-zed-mock-refusal.jsonl")
    assert rp.runtime.backend == "claude"
    session = await rp.runtime.new_session()
    ev = events()
    async with asyncio.timeout(HANG):
        stats = await session.prompt("say hi", on_event=ev)
    assert stats.stop_reason == "refusal"
    assert stats.refusal is not None and "Usage Policy" in stats.refusal.explanation
    assert stats.refusal.recommended_model  # 0.23.1 names a model to switch to
    assert ev.items[-1] == TurnEnded("refusal", stats.refusal)


async def test_gemini_text_turn(replay: Replay, events) -> None:
    rp = await replay("gemini-mock-text.jsonl")
    assert rp.runtime.backend == "gemini"
    session = await rp.runtime.new_session()
    ev = events()
    async with asyncio.timeout(HANG):
        stats = await session.prompt("say hi", on_event=ev)
    assert stats.text == "Hello from the loopback mock." and stats.stop_reason == "end_turn"
    assert [e.text for e in ev.of(TextChunk)] == ["Hello ", "from the ", "loopback mock."]


async def test_gemini_400_is_malformed(replay: Replay) -> None:
    rp = await replay("gemini-mock-400.jsonl")
    session = await rp.runtime.new_session()
    with pytest.raises(AcpError) as info:
        async with asyncio.timeout(HANG):
            await session.prompt("say hi")
    assert info.value.rpc_code == 400, "gemini-cli answers with the HTTP status as the JSON-RPC code"
    assert classify(info.value).kind == "malformed"
