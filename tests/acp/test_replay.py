"""Recorded sessions of real agents (tests/fixtures/captures) replayed through our whole stack.

``replay_agent.py`` plays the recorded agent->client frames back in order, answering our requests
with the recorded responses; the frames our client sends are recorded and schema-checked.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from core.acp.client import AcpAuthRequired, AcpError
from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.acp.types import Cost, PermissionRequest, RefusalInfo, ToolCall, TurnEnded, UsageUpdate
from core.failures import classify
from tests.fakes.acp_schema import validate_record_file

CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "captures"
REPLAY_AGENT = Path(__file__).resolve().parent / "replay_agent.py"
HANG = 15.0


def _agent_frames(capture: str) -> list[dict[str, Any]]:
    frames = []
    for line in (CAPTURES / capture).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("dir") == "agent->client":
            frames.append(entry["data"])
    return frames


def recorded_chunks(capture: str) -> list[str]:
    return [f["params"]["update"]["content"]["text"] for f in _agent_frames(capture)
            if f.get("method") == "session/update"
            and f["params"]["update"].get("sessionUpdate") == "agent_message_chunk"]


class Replayed:
    def __init__(self, runtime: AcpRuntime, record: Path) -> None:
        self.runtime = runtime
        self.record = record

    def client_frames(self) -> list[dict[str, Any]]:
        return validate_record_file(self.record)


@pytest.fixture
async def replay(tmp_path: Path):
    started: list[Replayed] = []

    async def run(capture: str, *, tool_gate: str = "ask", env: dict[str, str] | None = None) -> Replayed:
        record = tmp_path / f"{capture}.client.jsonl"
        backend = "codex" if capture.startswith("codex") else "claude"
        spec = AgentSpec(name=backend, command=sys.executable,
                         args=(str(REPLAY_AGENT), str(CAPTURES / capture), "--record", str(record)),
                         env=dict(env or {}), cwd=str(tmp_path), backend=backend, tool_gate=tool_gate)
        async with asyncio.timeout(HANG):
            runtime = await AcpRuntime.start(spec)
        started.append(Replayed(runtime, record))
        return started[-1]

    yield run
    for replayed in started:
        await replayed.runtime.close()
        validate_record_file(replayed.record)


@pytest.mark.parametrize("capture", ["claude-new-mock-text.jsonl", "codex-zed-mock-text.jsonl"])
async def test_text_turn(replay, events, capture: str) -> None:
    rp = await replay(capture, env={"OPENAI_API_KEY": "sk-test"})
    session = await rp.runtime.new_session()
    ev = events()
    async with asyncio.timeout(HANG):
        stats = await session.prompt("say hi", on_event=ev)
    expected = "".join(recorded_chunks(capture))
    assert "Hello from the loopback mock." in expected
    assert stats.text == expected
    assert ev.text == expected
    assert stats.stop_reason == "end_turn"
    assert ev.items[-1] == TurnEnded("end_turn")
    if capture.startswith("claude"):
        # claude-agent-acp 0.101 reports the session's cost with its usage
        assert ev.of(UsageUpdate)[-1] == UsageUpdate(12, 1000000, Cost(0.00015999999999999999, "USD"))
        # claude starts in mode "auto", which runs tools unasked: with a gate of "ask" we leave it
        assert any(f.get("method") == "session/set_mode" and f["params"]["modeId"] == "default"
                   for f in rp.client_frames())
    else:
        auth = [f for f in rp.client_frames() if f.get("method") == "authenticate"]
        assert [a["params"] for a in auth] == [{"methodId": "openai-api-key"}]


ERRORS = [
    ("claude-new-mock-429.jsonl", "rate_limit", True),
    ("claude-new-mock-400.jsonl", "malformed", False),
    ("claude-new-mock-401.jsonl", "auth", False),
    ("claude-new-mock-529.jsonl", "overloaded", True),
    ("codex-zed-mock-429.jsonl", "rate_limit", True),
    ("codex-zed-mock-400.jsonl", "malformed", False),
    ("codex-zed-mock-401.jsonl", "auth", False),
]


@pytest.mark.parametrize(("capture", "kind", "transient"), ERRORS, ids=[e[0] for e in ERRORS])
async def test_error_turn_classifies(replay, capture: str, kind: str, transient: bool) -> None:
    rp = await replay(capture, env={"OPENAI_API_KEY": "sk-test"})
    session = await rp.runtime.new_session()
    with pytest.raises(AcpError) as info:
        async with asyncio.timeout(HANG):
            await session.prompt("say hi")
    exc = info.value
    verdict = classify(exc, backend=rp.runtime.backend)
    assert (verdict.kind, verdict.transient) == (kind, transient)
    assert exc.transient is transient
    assert isinstance(exc, AcpAuthRequired) is (kind == "auth")
    assert exc.partial_output == "".join(recorded_chunks(capture))  # the error text streamed first
    assert not session.busy


async def test_refusal_stop_reason(replay, events) -> None:
    rp = await replay("claude-new-mock-refusal.jsonl")
    session = await rp.runtime.new_session()
    ev = events()
    async with asyncio.timeout(HANG):
        stats = await session.prompt("say hi", on_event=ev)
    assert stats.stop_reason == "refusal"
    assert stats.refusal is None
    assert ev.items[-1] == TurnEnded("refusal", RefusalInfo())  # claude sends no payload


async def test_hang_then_cancel(replay, events) -> None:
    rp = await replay("claude-new-mock-hang.jsonl")
    session = await rp.runtime.new_session()
    ev = events()
    turn = asyncio.create_task(session.prompt("say hi", on_event=ev))
    async with asyncio.timeout(HANG):
        while not any(f.get("method") == "session/prompt" for f in rp.client_frames()):
            await asyncio.sleep(0.01)
        await session.cancel()
    assert turn.done()
    assert turn.result().stop_reason == "cancelled"


async def test_tool_permission_goes_to_the_approver(replay, events) -> None:
    rp = await replay("claude-new-mock-tool-allow.jsonl")
    session = await rp.runtime.new_session()
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> str:
        asked.append(request)
        return "allow_always"  # not offered by claude here: the allow_once option answers

    ev = events()
    async with asyncio.timeout(HANG):
        stats = await session.prompt("say hi", on_event=ev, approver=approver)
    [request] = asked
    assert [o.kind for o in request.options] == ["allow_once", "reject_once"]
    assert request.tool_call.tool_call_id == "toolu_mock1"
    assert request.tool_call.kind == "execute"
    assert request.tool_call.title == "rm <workspace>/perm-test-file"
    answers = [f for f in rp.client_frames() if "result" in f and "outcome" in (f["result"] or {})]
    assert [a["result"] for a in answers] == [{"outcome": {"outcome": "selected", "optionId": "allow-once"}}]
    assert answers[0]["id"] == 0  # the agent's own request id, echoed
    assert stats.tool_ran is True
    assert stats.stop_reason == "end_turn"
    assert stats.text.endswith("Hello from the loopback mock.")
    last_call = ev.of(ToolCall)[-1]
    assert (last_call.status, last_call.kind) == ("completed", "execute")
    # set_mode came from the capture (claude starts in "auto"), answered as recorded
    assert session.current_mode == "default"


@pytest.mark.parametrize("capture", ["claude-new-0.101.0-node20.jsonl", "claude-zed-0.23.1.jsonl"])
async def test_claude_without_credentials(replay, capture: str) -> None:
    rp = await replay(capture)
    session = await rp.runtime.new_session()  # claude only finds out at the first prompt
    with pytest.raises(AcpAuthRequired) as info:
        await session.prompt("say hi")
    assert classify(info.value, backend="claude").kind == "auth"
    with pytest.raises(AcpError) as load:
        await rp.runtime.load_session("does-not-exist")
    assert load.value.transient is False
    assert "does-not-exist" not in rp.runtime.sessions


async def test_codex_without_credentials(replay) -> None:
    rp = await replay("codex-zed-0.16.0.jsonl")
    assert not any(f.get("method") == "authenticate" for f in rp.client_frames())  # no key: not claimed
    with pytest.raises(AcpAuthRequired) as info:
        await rp.runtime.new_session()
    verdict = classify(info.value, backend="codex")
    assert verdict.kind == "auth"
    assert "codex login" in verdict.prose
