"""Copilot CLI, opencode and Qwen Code (and gemini-cli's 429 and 503, Auggie's refusal): the agents
that retry failed model calls by themselves, each against the loopback model API.

Copilot writes a failed model call as answer text ("Error: ...", after "Info: ... Retrying..."
lines) and ends the turn end_turn: the relay makes it the failure it is. Qwen Code retries a 429 or
a 5xx for minutes without a word: the prompt budget cuts it, and the sentence names the rate limit.
None of them is retried again by the relay: one prompt per turn.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from dataclasses import replace

import pytest

from core.acp.client import AcpError, AcpTimeoutError
from core.acp.runtime import AcpRuntime
from core.acp.types import TOOL_STATUS_DENIED, AcpEvent, AcpPromptStats, Notice, PermissionRequest, TextChunk, ToolCall
from core.ask import run_ask
from core.engine import wording
from core.failures import classify
from core.retry import RetryPolicy
from tests.fakes.model_api import MOCK_TEXT, TOOL_DONE_TEXT
from tests.peers.harness import (
    PEER_TEST_TIMEOUT_S,
    REQUEST_TIMEOUT_S,
    Peer,
    RecordingApprover,
    build_peer,
    within,
)
from tests.peers.relay import PeerRelay
from tests.peers.test_relay import raw_in, watch

pytestmark = pytest.mark.peer

#: Long enough for Copilot's five retries (about 6 s for a 429, 15 s for a 529), far shorter than
#: Qwen Code's silent loop (minutes): the budget that ends it.
PROMPT_S = 25.0
#: Qwen Code and opencode retry a 529 (and Qwen a 429) for minutes: these cases use a short budget.
SILENT_S = 8.0
#: The model-API failures each agent reports within PROMPT_S, and the kind the relay makes of them.
REPORTED = {
    "copilot-1.0.102": {"400": "malformed", "401": "auth", "429": "rate_limit", "529": "overloaded"},
    "opencode-1.18.33": {"400": "malformed", "401": "auth", "429": "rate_limit"},
    "qwen-0.24.4": {"400": "malformed", "401": "auth"},
}


async def _prompt(peer: Peer, scenario: str, events: list[AcpEvent], *, timeout_s: float = PROMPT_S,
                  approver: RecordingApprover | None = None, text: str = "say hi") -> AcpPromptStats:
    peer.mock.scenario = scenario

    async def body() -> AcpPromptStats:
        async with await AcpRuntime.start(peer.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            assert rt.backend == peer.name, "detected from agentInfo.name"
            session = await rt.new_session()
            return await session.prompt(text, on_event=events.append, approver=approver, timeout_s=timeout_s)

    return await within(body(), PEER_TEST_TIMEOUT_S)


def _streamed(events: list[AcpEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


async def test_text_turn_then_a_second_prompt_in_the_same_session(other: Peer) -> None:
    other.mock.scenario = "text"
    events: list[AcpEvent] = []

    async def body() -> tuple[AcpPromptStats, AcpPromptStats]:
        async with await AcpRuntime.start(other.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            assert rt.backend == other.name
            session = await rt.new_session()
            first = await session.prompt("say hi", on_event=events.append, timeout_s=PROMPT_S)
            second = await session.prompt("and again", on_event=events.append, timeout_s=PROMPT_S)
            return first, second

    first, second = await within(body())
    assert (first.stop_reason, first.text) == ("end_turn", MOCK_TEXT)
    assert (second.stop_reason, second.text) == ("end_turn", MOCK_TEXT)
    assert other.prompts() == 2
    assert "and again" in str(other.mock.conversation_requests()[-1].body)


@pytest.mark.parametrize("scenario", ["400", "401", "429", "529"])
async def test_a_failed_model_call_is_the_failure_it_is_never_an_answer(other: Peer, scenario: str) -> None:
    kind = REPORTED[other.key].get(scenario)
    if kind is None:
        pytest.skip(f"{other.key} retries a {scenario} for minutes: see the silent-retry case")
    events: list[AcpEvent] = []
    with pytest.raises(AcpError) as caught:
        await _prompt(other, scenario, events)
    verdict = classify(caught.value, backend=other.name)
    assert verdict.kind == kind, caught.value.raw()
    assert not _streamed(events), "Copilot's 'Error:' and 'Info:' lines are kept back"
    assert "127.0.0.1" not in verdict.prose, "the provider URL is never shown"
    if kind == "malformed":
        assert "/compact" in verdict.prose
    assert other.prompts() == 1
    if other.key.startswith("copilot") and scenario in ("429", "529"):
        assert len(other.mock.conversation_requests()) == 6, "Copilot retried five times by itself"
    if other.key.startswith("copilot") and scenario == "529":  # a 429's retries it keeps to itself
        assert any(isinstance(e, Notice) for e in events), "the person heard it was retrying"


@pytest.mark.parametrize("scenario", ["429", "529"])
async def test_a_silent_retry_loop_is_cut_by_the_prompt_budget(other: Peer, scenario: str) -> None:
    if scenario in REPORTED[other.key]:
        pytest.skip(f"{other.key} reports a {scenario} itself")
    events: list[AcpEvent] = []
    with pytest.raises(AcpTimeoutError) as caught:
        await _prompt(other, scenario, events, timeout_s=SILENT_S)
    prose = classify(caught.value, backend=other.name).prose
    assert "rate-limit" in prose and "retr" in prose, prose
    assert len(other.mock.conversation_requests()) >= 2, "the agent was retrying"
    assert other.prompts() == 1


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_a_tool_call_allowed_runs_and_denied_does_not(other: Peer, answer: str) -> None:
    approver = RecordingApprover(answer)
    events: list[AcpEvent] = []
    stats = await _prompt(other, "tool", events, approver=approver, text="write the marker file")
    assert len(approver.asked) == 1, approver.asked
    assert approver.asked[0].tool_call.kind == "execute"
    assert stats.stop_reason == "end_turn"
    if answer == "allow_once":
        assert other.marker.read_text().strip() == "peer-tool-ran"
        assert stats.text.strip().endswith(TOOL_DONE_TEXT)
    else:
        assert not other.marker.exists()
        assert not stats.text.strip(), "Copilot's 'Info: Operation cancelled by user' is no answer"
        assert [e.status for e in events if isinstance(e, ToolCall)][-1] == TOOL_STATUS_DENIED


async def test_stop_during_a_hung_model_call(other: Peer) -> None:
    other.mock.scenario = "hang"

    async def body() -> AcpPromptStats:
        async with await AcpRuntime.start(other.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            turn = asyncio.create_task(session.prompt("say hi", timeout_s=PROMPT_S))
            try:
                await other.mock.wait_for_request(timeout_s=REQUEST_TIMEOUT_S)
                await session.cancel(wait_s=10.0)
                assert not session.unresponsive, "the agent ended the turn itself"
                return await asyncio.wait_for(turn, 5.0)
            finally:
                turn.cancel()

    stats = await within(body())
    assert stats.stop_reason == "cancelled"


async def test_through_the_relay_one_prompt_and_the_prose(relay, other: Peer) -> None:
    """The relay does not multiply the agent's own retries, and shows no provider text."""
    scenario = "429" if "429" in REPORTED[other.key] else "400"
    other.mock.scenario = scenario
    r: PeerRelay = await relay(other)
    shown = watch(r)
    reply = await within(r.ask("say hi"))
    assert other.prompts() == 1, reply.text
    expected = "rate-limiting" if scenario == "429" else "malformed"
    assert expected in reply.text, reply.text
    assert wording.retrying(2, 3) not in reply.text
    assert not raw_in(shown) and not [t for t in shown if "Error:" in t or "127.0.0.1" in t], shown


async def test_a_denied_tool_call_is_said_in_the_chat(relay, other: Peer) -> None:
    """The gate denies it here (``tool_gate`` deny), exactly as a person's "deny" is answered."""
    other.mock.scenario = "tool"
    other.spec = replace(other.spec, tool_gate="deny")
    r: PeerRelay = await relay(other)
    reply = await within(r.ask("write the marker file"))
    assert not other.marker.exists()
    assert wording.TOOL_DENIED in reply.text, reply.text
    assert wording.EMPTY_ANSWER not in reply.text


@pytest.mark.parametrize("scenario", ["429", "529"])
async def test_gemini_429_and_503_are_the_provider_failures_they_are(gemini: Peer, scenario: str) -> None:
    """gemini-cli's codes are HTTP statuses. It tries a failed model call ten times by default
    (minutes for a 503); ``general.maxAttempts`` 2 in its settings lets it report the failure here."""
    settings = gemini.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"general": {"maxAttempts": 2}}), encoding="utf-8")
    events: list[AcpEvent] = []
    with pytest.raises(AcpError) as caught:
        await _prompt(gemini, scenario, events)
    verdict = classify(caught.value, backend="gemini")
    # the 503's words say "overloaded": those decide before the status does
    assert verdict.kind == ("rate_limit" if scenario == "429" else "overloaded"), caught.value.raw()
    assert verdict.transient and "reported an error" not in verdict.prose
    assert len(gemini.mock.conversation_requests()) == 2, "its own two attempts"
    assert gemini.prompts() == 1


async def test_gemini_retrying_a_429_in_silence_is_cut_by_the_prompt_budget(gemini: Peer) -> None:
    events: list[AcpEvent] = []
    with pytest.raises(AcpTimeoutError) as caught:
        await _prompt(gemini, "429", events, timeout_s=SILENT_S)
    prose = classify(caught.value, backend="gemini").prose
    assert "rate-limiting" in prose and "retries" in prose, prose


async def test_auggie_without_an_account_is_a_sign_in_problem(auggie: Peer) -> None:
    with pytest.raises(AcpError) as caught:
        await within(_prompt(auggie, "text", []))
    verdict = classify(caught.value, backend="generic")
    assert verdict.kind == "auth" and not verdict.transient
    assert "auggie login" in verdict.prose


async def test_qwen_model_shown_by_its_name_and_unknown_methods_logged_once(
        peer_paths, model_api, tmp_path, caplog) -> None:
    """Qwen Code's model id "$runtime|openai|qwen3-coder-plus(openai)" has a readable name; its
    qwen/notify/session/mode-update and craft/drainMidTurnQueue frames leave one debug line each."""
    qwen = build_peer("qwen-0.24.4", peer_paths, model_api, tmp_path)
    caplog.set_level(logging.DEBUG, logger="acp_relay.acp.runtime")
    qwen.mock.scenario = "tool"

    async def allow(request: PermissionRequest) -> str:
        return "allow_once"

    async def body() -> tuple[str | None, str | None]:
        async with await AcpRuntime.start(qwen.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            await session.prompt("write the marker file", approver=allow, timeout_s=PROMPT_S)
            return session.current_model, session.model_label(session.current_model)

    model_id, label = await within(body())
    assert model_id is not None and model_id.startswith("$runtime|") and label == "qwen3-coder-plus"
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    for method in ("qwen/notify/session/mode-update", "craft/drainMidTurnQueue"):
        assert sum(method in line for line in lines) == 1, lines


async def test_ask_writes_one_tool_line_for_claude_code_acp(peer_paths, model_api, tmp_path) -> None:
    """claude-code-acp sends tool_call twice for one call; ``ask`` (tool_gate allow) writes one line."""
    peer = build_peer("claudecode-0.16.2", peer_paths, model_api, tmp_path, tool_gate="allow")
    peer.mock.scenario = "tool"
    out, err = io.StringIO(), io.StringIO()
    code = await within(run_ask(peer.spec, "write the marker file", timeout_s=PROMPT_S,
                                request_timeout_s=REQUEST_TIMEOUT_S, approval_s=PROMPT_S,
                                policy=RetryPolicy(attempts=1), out=out, err=err))
    assert code == 0, err.getvalue()
    assert peer.marker.read_text().strip() == "peer-tool-ran"
    assert sum(line.startswith("[tool]") for line in err.getvalue().splitlines()) == 1, err.getvalue()
