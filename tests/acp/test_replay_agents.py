"""Recorded sessions of issue 18's agents replayed through our stack (tests/fixtures/captures, made by
the peer tier): Copilot CLI 1.0.102, opencode 1.18.33, Qwen Code 0.24.4, gemini-cli 0.61.0's 429
and 503, Auggie 0.36.0's refusal without an account.

Copilot writes a failed model call as answer text ("Error: ..." after "Info: ... Retrying..." lines)
and ends end_turn; Qwen Code retries a 429 without a word; gemini-cli's code is the HTTP status.
"""

from __future__ import annotations

import asyncio
import io
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from core.acp.client import AcpAuthRequired, AcpError, AcpTimeoutError
from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.acp.types import TOOL_STATUS_DENIED, AcpPromptStats, Notice, PermissionRequest, TextChunk, ToolCall
from core.ask import run_ask
from core.engine import wording
from core.failures import classify
from core.retry import RetryPolicy
from tests.acp.test_replay import CAPTURES, HANG, REPLAY_AGENT, Replayed
from tests.fakes.acp_schema import validate_record_file

Replay = Callable[..., Awaitable[Replayed]]
MOCK_TEXT = "Hello from the loopback mock."
POLICY = RetryPolicy(attempts=3, budget_s=10, base_delay_s=0.01)


def _spec(capture: str, tmp_path: Path, record: Path, tool_gate: str = "ask") -> AgentSpec:
    return AgentSpec(name="replayed", command=sys.executable,
                     args=(str(REPLAY_AGENT), str(CAPTURES / capture), "--record", str(record)),
                     cwd=str(tmp_path), backend="", tool_gate=tool_gate)  # the backend is detected


@pytest.fixture
async def replay(tmp_path: Path) -> AsyncIterator[Replay]:
    started: list[Replayed] = []

    async def run(capture: str, tool_gate: str = "ask") -> Replayed:
        record = tmp_path / f"{capture}.{len(started)}.client.jsonl"
        async with asyncio.timeout(HANG):
            runtime = await AcpRuntime.start(_spec(capture, tmp_path, record, tool_gate))
        started.append(Replayed(runtime, record))
        return started[-1]

    yield run
    for replayed in started:
        await replayed.runtime.close()
        validate_record_file(replayed.record)  # what our client sent is valid ACP


async def _ask(capture: str, tmp_path: Path, *, tool_gate: str = "ask") -> tuple[int, str, str, int]:
    record = tmp_path / "ask.client.jsonl"
    out, err = io.StringIO(), io.StringIO()
    async with asyncio.timeout(HANG):
        code = await run_ask(_spec(capture, tmp_path, record, tool_gate), "say hi", timeout_s=HANG,
                             request_timeout_s=HANG, approval_s=HANG, policy=POLICY, out=out, err=err)
    prompts = [f for f in validate_record_file(record) if f.get("method") == "session/prompt"]
    return code, out.getvalue(), err.getvalue(), len(prompts)


async def _tool_turn(rp: Replayed, answer: str, ev: Any) -> AcpPromptStats:
    """The capture's tool turn, the approver answering ``answer`` (an option kind)."""
    session = await rp.runtime.new_session()

    async def approver(request: PermissionRequest) -> str:
        return answer

    async with asyncio.timeout(HANG):
        return await session.prompt("write the marker file", on_event=ev, approver=approver)


@pytest.mark.parametrize(("capture", "backend"), [
    ("copilot-mock-text.jsonl", "copilot"), ("opencode-mock-text.jsonl", "opencode"), ("qwen-mock-text.jsonl", "qwen"),
])
async def test_handshake_text_turn_and_a_second_prompt(replay: Replay, events, capture: str, backend: str) -> None:
    rp = await replay(capture)
    assert rp.runtime.backend == backend, "detected from agentInfo.name"
    session = await rp.runtime.new_session()
    for prompt in ("say hi", "and again"):
        ev = events()
        async with asyncio.timeout(HANG):
            stats = await session.prompt(prompt, on_event=ev)
        assert (stats.stop_reason, stats.text, ev.text) == ("end_turn", MOCK_TEXT, MOCK_TEXT)


@pytest.mark.parametrize(("capture", "kind"), [
    ("copilot-mock-400.jsonl", "malformed"),
    ("copilot-mock-401.jsonl", "auth"),  # after two "Info: ... Retrying..." lines
    ("copilot-mock-429.jsonl", "rate_limit"),  # "retried 5 times ... Last error: 429 ..."
    ("copilot-mock-529.jsonl", "overloaded"),  # five "Info: ... Retrying..." lines first
])
async def test_copilot_failed_model_call_is_an_error_never_an_answer(replay: Replay, events, capture: str,
                                                                     kind: str) -> None:
    rp = await replay(capture)
    assert rp.runtime.backend == "copilot"
    session = await rp.runtime.new_session()
    ev = events()
    with pytest.raises(AcpError) as info:
        async with asyncio.timeout(HANG):
            await session.prompt("say hi", on_event=ev)
    verdict = classify(info.value)
    assert verdict.kind == kind, info.value.raw()
    assert not ev.of(TextChunk), "Copilot's 'Error:' and 'Info:' lines are never an answer"
    assert "http" not in verdict.prose and "<port>" not in verdict.prose, "the provider URL is never shown"
    assert not info.value.partial_output.strip()
    if kind == "malformed":
        assert "/compact" in verdict.prose
    retrying = [n for n in ev.of(Notice) if n.key == "agent-retry"]
    assert bool(retrying) == (kind in ("auth", "overloaded")), "said when Copilot said it was retrying"


async def test_copilot_answer_text_that_begins_like_its_status_line_is_still_an_answer(replay: Replay,
                                                                                        events) -> None:
    """Only a whole chunk in Copilot's status shape is kept back; the mock's text is three chunks."""
    stats = await _tool_turn(await replay("copilot-mock-tool-allow.jsonl"), "allow_once", events())
    assert stats.text.endswith("done") and stats.tool_ran


@pytest.mark.parametrize(("capture", "prose"), [
    ("copilot-mock-400.jsonl", "/compact"),
    ("copilot-mock-429.jsonl", "rate-limiting"),
])
async def test_ask_on_a_copilot_failure_exits_1_with_the_prose_and_does_not_retry_it(tmp_path: Path, capture: str,
                                                                                      prose: str) -> None:
    code, out, err, prompts = await _ask(capture, tmp_path)
    assert (code, out, prompts) == (1, "", 1), err
    assert prose in err.strip().splitlines()[-1]
    assert "Error:" not in err and "127.0.0.1" not in err


@pytest.mark.parametrize(("capture", "kind"), [
    ("qwen-mock-400.jsonl", "malformed"),
    ("qwen-mock-401.jsonl", "auth"),  # data.details "401 Incorrect API key provided: ..."
    ("opencode-mock-400.jsonl", "malformed"),
    ("opencode-mock-401.jsonl", "auth"),
    ("opencode-mock-429.jsonl", "rate_limit"),  # after nine model calls of its own
    ("gemini-mock-429.jsonl", "rate_limit"),  # {"code": 429, "message": "Resource has been exhausted ..."}
    ("gemini-mock-503.jsonl", "overloaded"),
])
async def test_json_rpc_errors_of_the_other_agents_get_their_class(replay: Replay, capture: str, kind: str) -> None:
    rp = await replay(capture)
    session = await rp.runtime.new_session()
    with pytest.raises(AcpError) as info:
        async with asyncio.timeout(HANG):
            await session.prompt("say hi")
    verdict = classify(info.value)
    assert verdict.kind == kind, info.value.raw()
    assert isinstance(info.value, AcpAuthRequired) == (kind == "auth")
    assert "reported an error" not in verdict.prose


async def test_qwen_silent_429_loop_is_cut_by_the_prompt_budget_naming_the_rate_limit(replay: Replay) -> None:
    """The capture: the prompt, then nothing (qwen retried the 429 for the whole budget), then our cancel."""
    rp = await replay("qwen-mock-429-cut.jsonl")
    session = await rp.runtime.new_session()
    with pytest.raises(AcpTimeoutError) as info:
        async with asyncio.timeout(HANG):
            await session.prompt("say hi", timeout_s=0.5, cancel_wait_s=HANG)
    prose = classify(info.value, backend=rp.runtime.backend).prose
    assert "rate-limiting" in prose and "retries" in prose
    assert not session.unresponsive, "the recorded agent ended the turn on our cancel"


async def test_qwen_model_is_shown_by_its_name(replay: Replay) -> None:
    rp = await replay("qwen-mock-text.jsonl")
    session = await rp.runtime.new_session()
    assert session.current_model == "$runtime|openai|qwen3-coder-plus(openai)"
    assert session.model_label(session.current_model) == "qwen3-coder-plus"
    assert session.model_id("qwen3-coder-plus") == session.current_model


async def test_unknown_agent_methods_are_logged_once_at_debug_by_name(replay: Replay, caplog) -> None:
    """qwen's qwen/notify/session/mode-update notifications and craft/drainMidTurnQueue requests (two
    of these in this capture, the second after the prompt): one debug line per method and agent process."""
    caplog.set_level(logging.DEBUG, logger="acp_relay.acp.runtime")
    rp = await replay("qwen-mock-tool-allow.jsonl")
    await _tool_turn(rp, "allow_once", None)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    for method in ("qwen/notify/session/mode-update", "craft/drainMidTurnQueue"):
        assert sum(method in line for line in lines) == 1, lines
    answers = [f for f in validate_record_file(rp.record) if "error" in f]
    assert answers and all(f["error"]["code"] == -32601 for f in answers), "still answered -32601"


@pytest.mark.parametrize("capture", ["qwen-mock-tool-deny.jsonl", "copilot-mock-tool-deny.jsonl",
                                     "opencode-mock-tool-deny.jsonl"])
async def test_a_denied_tool_call_reads_denied_and_nothing_is_answered(replay: Replay, events, capture: str) -> None:
    ev = events()
    stats = await _tool_turn(await replay(capture), "reject_once", ev)
    assert ev.of(ToolCall)[-1].status == TOOL_STATUS_DENIED, "it never ran: not 'failed'"
    assert not stats.text.strip(), "Copilot's 'Info: Operation cancelled by user' is no answer"


async def test_ask_says_a_denied_tool_call_was_denied_and_exits_0(tmp_path: Path) -> None:
    code, out, err, prompts = await _ask("qwen-mock-tool-deny.jsonl", tmp_path, tool_gate="deny")
    assert (code, out, prompts) == (0, "", 1), err
    assert wording.TOOL_DENIED in err
    assert wording.EMPTY_ANSWER not in err
    assert err.count("[tool]") == 1 and "(denied)" in err


async def test_auggie_refusing_without_an_account_is_a_clear_sign_in_sentence(replay: Replay) -> None:
    rp = await replay("auggie-0.36.0.jsonl")
    with pytest.raises(AcpAuthRequired) as info:
        async with asyncio.timeout(HANG):
            await rp.runtime.new_session()
    prose = classify(info.value).prose
    assert prose.startswith("The agent is not signed in") and "auggie login" in prose


async def test_claude_code_acp_is_the_claude_backend_and_its_text_turn(replay: Replay, events) -> None:
    rp = await replay("claudecode-mock-text.jsonl")
    assert rp.runtime.backend == "claude", "agentInfo.name @zed-industries/claude-code-acp"
    session = await rp.runtime.new_session()
    ev = events()
    async with asyncio.timeout(HANG):
        stats = await session.prompt("say hi", on_event=ev)
    assert (stats.stop_reason, stats.text) == ("end_turn", MOCK_TEXT)


async def test_ask_writes_one_tool_line_for_claude_code_acps_doubled_tool_call(tmp_path: Path) -> None:
    """claude-code-acp 0.16 sends ``tool_call`` twice for one call (first titled "Terminal")."""
    capture = "claudecode-mock-tool-allow.jsonl"
    calls = (CAPTURES / capture).read_text().count('"sessionUpdate": "tool_call"')
    assert calls == 2, "the capture holds the doubled tool_call"
    code, out, err, prompts = await _ask(capture, tmp_path, tool_gate="allow")
    assert (code, prompts) == (0, 1), err
    assert out.strip().endswith("done")
    tool_lines = [line for line in err.splitlines() if line.startswith("[tool]")]
    assert len(tool_lines) == 1, err
    assert "marker.txt" in tool_lines[0] and "(completed)" in tool_lines[0]


async def test_claude_code_acp_denial_reads_denied(replay: Replay, events) -> None:
    ev = events()
    stats = await _tool_turn(await replay("claudecode-mock-tool-deny.jsonl"), "reject_once", ev)
    assert ev.of(ToolCall)[-1].status == TOOL_STATUS_DENIED
    assert not stats.text.strip()


async def test_ask_climbs_the_ladder_for_claude_code_acp_which_does_not_retry_itself(tmp_path: Path) -> None:
    code, out, err, prompts = await _ask("claudecode-mock-429-retried.jsonl", tmp_path)
    assert (code, out, prompts) == (1, "", 3), err
    assert "rate-limiting" in err.strip().splitlines()[-1]


async def test_ask_says_once_that_copilot_is_retrying_then_gives_the_prose(tmp_path: Path) -> None:
    code, out, err, prompts = await _ask("copilot-mock-529.jsonl", tmp_path)
    assert (code, out, prompts) == (1, "", 1), err
    assert err.count(wording.agent_retrying(0)) == 1, "five retry lines from Copilot, one sentence"
    assert "overloaded" in err.strip().splitlines()[-1]
    assert "Info:" not in err and "Error:" not in err
