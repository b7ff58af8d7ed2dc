"""codex-acp 2.x fails a turn without a JSON-RPC error: a ``systemError`` thread status, the provider's
text streamed as the answer, then end_turn. The session turns that into the AcpError it stands for."""

from __future__ import annotations

import asyncio
import json

import pytest

from core.acp.client import AcpError
from core.acp.error_text import ThreadFailure
from core.acp.spec import detect_backend
from core.acp.types import AcpEvent, AcpPromptStats, SessionInfo, TextChunk, TurnEnded, UsageUpdate
from core.failures import classify

HANG = 15.0
SYSTEM_ERROR = "thread_status systemError"
RATE_LIMITED = "exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock"
RAW_400 = json.dumps({"error": {"type": "invalid_request_error", "code": None,
                                "message": "Improperly formed request.", "param": None}})


async def _turn(start, agent, events, script: str, *flags: str):
    rt = await start(agent(*flags, backend="codex"))
    session = await rt.new_session()
    ev = events()
    async with asyncio.timeout(HANG):
        try:
            return await session.prompt(script, on_event=ev), ev, session
        except AcpError as exc:
            return exc, ev, session


async def test_a_system_error_turn_raises_the_rate_limit_it_streamed(start, agent, events) -> None:
    got, ev, session = await _turn(start, agent, events,
                                   f"thread_status active\n{SYSTEM_ERROR}\ntext {RATE_LIMITED}\n\n")
    assert isinstance(got, AcpError), got
    verdict = classify(got, backend="codex")
    assert (verdict.kind, verdict.transient, got.transient) == ("rate_limit", True, True)
    assert ev.text == "", "the provider's text never reached the consumer as an answer"
    assert not any(isinstance(e, TurnEnded) for e in ev.items)
    assert got.partial_output == ""
    assert not session.busy


async def test_a_raw_400_body_is_the_malformed_error_and_never_an_answer(start, agent, events) -> None:
    got, ev, _ = await _turn(start, agent, events, f"{SYSTEM_ERROR}\ntext {RAW_400}")
    assert isinstance(got, AcpError), got
    verdict = classify(got, backend="codex")
    assert (verdict.kind, got.transient) == ("malformed", False)
    assert "/compact" in verdict.prose
    assert "invalid_request_error" not in verdict.prose and "{" not in verdict.prose
    assert "invalid_request_error" not in ev.text


async def test_text_streamed_before_the_failure_stays_the_partial_answer(start, agent, events) -> None:
    got, ev, _ = await _turn(start, agent, events, f"text Working on it.\n{SYSTEM_ERROR}\ntext {RATE_LIMITED}")
    assert isinstance(got, AcpError), got
    assert ev.text == "Working on it."
    assert got.partial_output == "Working on it."
    assert classify(got).kind == "rate_limit"


async def test_failure_text_streamed_before_the_status_is_still_the_error(start, agent, events) -> None:
    """Should the agent stream the text first and only then say the thread failed, the text run that
    just streamed is the error (the engine's echo handling drops it from the answer)."""
    got, _ev, _ = await _turn(start, agent, events,
                             f"text Working on it.\nthread_status active\ntext {RATE_LIMITED}\n{SYSTEM_ERROR}")
    assert isinstance(got, AcpError), got
    assert classify(got).kind == "rate_limit"
    assert RATE_LIMITED in got.message
    assert "Working on it." not in got.message


async def test_a_thread_that_runs_again_was_no_failure(start, agent, events) -> None:
    got, ev, _ = await _turn(start, agent, events,
                             f"{SYSTEM_ERROR}\ntext held\nthread_status active\ntext  and answered")
    assert isinstance(got, AcpPromptStats), got
    assert got.stop_reason == "end_turn"
    assert got.text == ev.text == "held and answered"


async def test_the_idle_status_of_a_good_turn_changes_nothing(start, agent, events) -> None:
    got, ev, _ = await _turn(start, agent, events, "thread_status active\ntext fine\nthread_status idle")
    assert isinstance(got, AcpPromptStats) and got.text == "fine"
    assert [e.status for e in ev.of(SessionInfo)] == ["active", "idle"]


async def test_a_refusal_streamed_as_a_system_error_is_a_refusal(start, agent, events) -> None:
    words = "This request appears to violate our Usage Policy."
    got, ev, _ = await _turn(start, agent, events, f"{SYSTEM_ERROR}\ntext {words}")
    assert isinstance(got, AcpPromptStats), got
    assert got.stop_reason == "refusal"
    assert got.refusal is not None and "Usage Policy" in got.refusal.explanation
    assert ev.items[-1] == TurnEnded("refusal", got.refusal)


async def test_the_retry_after_a_system_error_answers(start, agent, events) -> None:
    rt = await start(agent(backend="codex"))
    session = await rt.new_session()
    script = f"system_error_times k 1 {RATE_LIMITED}\ntext the answer"
    async with asyncio.timeout(HANG):
        with pytest.raises(AcpError):
            await session.prompt(script)
        stats = await session.prompt(script)
    assert stats.text == "the answer"


def test_an_empty_turn_is_one_that_produced_nothing() -> None:
    assert AcpPromptStats(stop_reason="end_turn").empty
    assert AcpPromptStats(stop_reason="end_turn", text=" \n").empty
    assert not AcpPromptStats(stop_reason="end_turn", text="hi").empty
    assert not AcpPromptStats(stop_reason="end_turn", tool_ran=True).empty
    assert not AcpPromptStats(stop_reason="cancelled").empty
    assert not AcpPromptStats(stop_reason="refusal").empty


@pytest.mark.parametrize(("command", "args", "agent_name", "backend"), [
    ("claude-agent-acp", (), "", "claude"),
    ("npx", ("-y", "@agentclientprotocol/claude-agent-acp@0.101.0"), "", "claude"),
    ("npx", ("--yes", "@zed-industries/claude-agent-acp"), "", "claude"),
    ("node", ("/x/node_modules/@agentclientprotocol/codex-acp/dist/index.js",), "", "codex"),
    ("/x/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp", (), "", "codex"),
    ("C:\\tools\\codex-acp.exe", (), "", "codex"),
    ("node", ("dist/index.js",), "@agentclientprotocol/codex-acp", "codex"),
    ("node", ("dist/index.js",), "codex-acp", "codex"),
    ("node", ("dist/index.js",), "@agentclientprotocol/claude-agent-acp", "claude"),
    ("node", ("dist/index.js",), "@zed-industries/claude-agent-acp", "claude"),
    ("codex-acp", (), "@agentclientprotocol/claude-agent-acp", "claude"),  # what the agent says wins
    ("/usr/local/bin/kiro-cli", ("acp",), "", "kiro"),
    ("kiro-cli-chat", ("acp",), "", "kiro"),
    ("node", ("bundle/gemini.js", "--acp"), "gemini-cli", "gemini"),
    ("node", ("/x/node_modules/@google/gemini-cli/bundle/gemini.js", "--acp"), "", "gemini"),
    ("/x/node_modules/@github/copilot-linux-x64/copilot", ("--acp",), "", "copilot"),
    ("copilot", ("--acp",), "Copilot", "copilot"),
    ("npx", ("-y", "@github/copilot", "--acp"), "", "copilot"),
    ("/x/node_modules/opencode-linux-x64/bin/opencode", ("acp",), "", "opencode"),
    ("opencode", ("acp",), "OpenCode", "opencode"),
    ("node", ("/x/node_modules/@qwen-code/qwen-code/cli-entry.js", "--acp"), "", "qwen"),
    ("qwen", ("--acp",), "qwen-code", "qwen"),
    ("node", ("/x/node_modules/@zed-industries/claude-code-acp/dist/index.js",), "", "claude"),
    ("node", ("augment.mjs", "--acp"), "auggie", "generic"),
    ("/home/claude/bin/agent", (), "fake-acp-agent", "generic"),  # a directory name decides nothing
])
def test_backend_detection(command: str, args: tuple[str, ...], agent_name: str, backend: str) -> None:
    assert detect_backend(command, args, agent_name) == backend


@pytest.mark.parametrize(("agent_name", "backend"), [
    ("@agentclientprotocol/codex-acp", "codex"), ("@agentclientprotocol/claude-agent-acp", "claude"),
    ("codex-acp", "codex"), ("gemini-cli", "gemini"), ("Copilot", "copilot"), ("qwen-code", "qwen"),
    ("OpenCode", "opencode"), ("auggie", "generic")])
async def test_the_backend_is_detected_from_the_agents_own_name(start, agent, agent_name: str,
                                                                backend: str) -> None:
    rt = await start(agent("--agent-name", agent_name, backend=""))
    assert rt.backend == backend



def _copilot_turn(*events: AcpEvent) -> tuple[str, ThreadFailure]:
    """Feed events as AcpSession does (released text comes back through observe); the answer text."""
    thread, text = ThreadFailure(), []

    def feed(event: AcpEvent) -> None:
        kept, released = thread.observe(event, len("".join(text)), "copilot")
        if kept:
            return
        if released:
            feed(TextChunk(released))
        if isinstance(event, TextChunk):
            text.append(event.text)

    for event in events:
        feed(event)
    return "".join(text), thread


RETRYING = "Info: Request failed due to a transient API error. Retrying..."


def test_copilot_retry_lines_before_a_successful_answer_are_never_part_of_it() -> None:
    text, thread = _copilot_turn(TextChunk(RETRYING), UsageUpdate(used=1, size=2), TextChunk("Hello "),
                                 TextChunk("there."))
    assert text == "Hello there." and not thread.failed


def test_copilot_error_line_then_the_end_is_the_turns_failure() -> None:
    text, thread = _copilot_turn(TextChunk(RETRYING), UsageUpdate(used=1, size=2),
                                 TextChunk("Error: 400 Improperly formed request."))
    assert text == "" and thread.failed
    error = thread.error(text, backend="copilot", advertised_models=())
    assert isinstance(error, AcpError) and classify(error).kind == "malformed"


def test_copilot_answer_that_merely_starts_like_a_status_line_is_kept_whole() -> None:
    text, thread = _copilot_turn(TextChunk("Error: the test"), TextChunk(" failed because x is None."))
    assert text == "Error: the test failed because x is None." and not thread.failed


def test_copilot_answer_after_an_error_line_means_the_error_was_not_the_end() -> None:
    text, thread = _copilot_turn(TextChunk("Error: tool exited 1"), UsageUpdate(used=1, size=2),
                                 TextChunk("Fixed it."))
    assert text == "Fixed it." and not thread.failed


def test_status_lines_are_only_copilots_rule() -> None:
    thread = ThreadFailure()
    assert thread.observe(TextChunk("Error: 400 Improperly formed request."), 0, "generic") == (False, "")
    assert not thread.failed
