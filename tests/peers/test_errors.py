"""Real agents, model-API failures: each one surfaces as the AcpError our classifier expects.

codex-acp 2.6 reports none of them as a JSON-RPC error (a ``systemError`` thread status and the
provider's text, then end_turn); the relay raises the error that text stands for, so the same
assertions hold for every release.
"""

from __future__ import annotations

import pytest

from core.acp.client import AcpAuthRequired, AcpError
from core.acp.runtime import AcpRuntime
from core.acp.types import AcpEvent, AcpPromptStats, TextChunk
from core.failures import classify
from tests.peers.harness import PROMPT_TIMEOUT_S, REQUEST_TIMEOUT_S, Peer, within

pytestmark = pytest.mark.peer


async def _prompt(peer: Peer, scenario: str, events: list[AcpEvent] | None = None) -> AcpPromptStats:
    peer.mock.scenario = scenario
    sink = events.append if events is not None else None

    async def body() -> AcpPromptStats:
        async with await AcpRuntime.start(peer.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            return await session.prompt("say hi", on_event=sink, timeout_s=PROMPT_TIMEOUT_S)

    return await within(body())


async def _prompt_error(peer: Peer, scenario: str) -> tuple[AcpError, list[AcpEvent]]:
    events: list[AcpEvent] = []
    with pytest.raises(AcpError) as caught:
        await _prompt(peer, scenario, events)
    assert peer.mock.conversation_requests(), "the agent reached the model API"
    assert peer.prompts() == 1
    return caught.value, events


async def test_401_is_auth_required(peer: Peer) -> None:
    exc, _ = await _prompt_error(peer, "401")
    verdict = classify(exc, backend=peer.name)
    assert isinstance(exc, AcpAuthRequired) or verdict.kind == "auth", (type(exc), exc.raw())
    assert verdict.kind == "auth"
    assert not exc.transient


async def test_429_is_a_transient_rate_limit(peer: Peer) -> None:
    exc, _ = await _prompt_error(peer, "429")
    assert exc.transient, exc.raw()
    assert classify(exc, backend=peer.name).kind == "rate_limit", exc.raw()


async def test_400_improperly_formed_is_malformed_and_points_at_compact(peer: Peer) -> None:
    exc, events = await _prompt_error(peer, "400")
    verdict = classify(exc, backend=peer.name)
    assert not exc.transient, exc.raw()
    assert verdict.kind == "malformed", exc.raw()
    assert "/compact" in verdict.prose
    streamed = "".join(e.text for e in events if isinstance(e, TextChunk))
    assert "invalid_request_error" not in streamed, "a raw JSON body never streams as an answer"


async def test_529_overloaded_is_transient(peer: Peer) -> None:
    exc, _ = await _prompt_error(peer, "529")
    assert exc.transient, exc.raw()
    assert classify(exc, backend=peer.name).kind in ("overloaded", "server_error"), exc.raw()


async def test_gemini_400_is_malformed(gemini: Peer) -> None:
    exc, _ = await _prompt_error(gemini, "400")
    verdict = classify(exc, backend="gemini")
    assert (verdict.kind, exc.transient) == ("malformed", False), exc.raw()
    assert "INVALID_ARGUMENT" not in verdict.prose


async def test_claude_refusal_ends_with_stop_reason_refusal(claude: Peer) -> None:
    """0.23.1 reports the refusal as an error naming a model to switch to; the relay folds it onto
    a refusal stop keeping only what the provider said. 0.101.0 streams the provider's explanation
    as text and stops with "refusal" itself."""
    events: list[AcpEvent] = []
    stats = await _prompt(claude, "refusal", events)
    assert stats.stop_reason == "refusal"
    streamed = "".join(e.text for e in events if isinstance(e, TextChunk))
    if claude.key == "claude-0.23.1":
        assert stats.refusal is not None
        assert "Usage Policy" in stats.refusal.explanation
        assert stats.refusal.category == ""  # the provider gave no category: left empty, never guessed
        assert streamed == ""
    else:
        assert stats.refusal is None, "0.101 sends the bare stop reason"
        assert "safeguards flagged this message" in streamed
    assert claude.mock.conversation_requests()[0].answered == "refusal"
