"""Real agents, model-API failures: each one surfaces as the AcpError our classifier expects."""

from __future__ import annotations

import pytest

from core.acp.client import AcpAuthRequired, AcpError
from core.acp.runtime import AcpRuntime
from core.acp.types import AcpPromptStats
from core.failures import classify
from tests.peers.harness import PROMPT_TIMEOUT_S, REQUEST_TIMEOUT_S, Peer, within

pytestmark = pytest.mark.peer


async def _prompt(peer: Peer, scenario: str) -> AcpPromptStats:
    peer.mock.scenario = scenario

    async def body() -> AcpPromptStats:
        async with await AcpRuntime.start(peer.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            return await session.prompt("say hi", timeout_s=PROMPT_TIMEOUT_S)

    return await within(body())


async def _prompt_error(peer: Peer, scenario: str) -> AcpError:
    with pytest.raises(AcpError) as caught:
        await _prompt(peer, scenario)
    assert peer.mock.conversation_requests(), "the agent reached the model API"
    return caught.value


async def test_401_is_auth_required(peer: Peer) -> None:
    exc = await _prompt_error(peer, "401")
    verdict = classify(exc, backend=peer.name)
    assert isinstance(exc, AcpAuthRequired) or verdict.kind == "auth", (type(exc), exc.raw())
    assert verdict.kind == "auth"
    assert not exc.transient


async def test_429_is_a_transient_rate_limit(peer: Peer) -> None:
    exc = await _prompt_error(peer, "429")
    assert exc.transient, exc.raw()
    assert classify(exc, backend=peer.name).kind == "rate_limit", exc.raw()


async def test_400_improperly_formed_is_malformed_and_points_at_compact(peer: Peer) -> None:
    exc = await _prompt_error(peer, "400")
    verdict = classify(exc, backend=peer.name)
    assert not exc.transient, exc.raw()
    assert verdict.kind == "malformed", exc.raw()
    assert "/compact" in verdict.prose


async def test_529_overloaded_is_transient(peer: Peer) -> None:
    exc = await _prompt_error(peer, "529")
    assert exc.transient, exc.raw()
    assert classify(exc, backend=peer.name).kind == "overloaded", exc.raw()


async def test_claude_refusal_is_a_refusal(claude: Peer) -> None:
    """claude-agent-acp 0.23.1 answers a model refusal with -32603 "API Error: Claude Code is unable
    to respond to this request, which appears to violate our Usage Policy ... try running /model X"
    (0.101.0 returns stopReason "refusal" instead). Either way the relay must see a refusal."""
    try:
        stats = await _prompt(claude, "refusal")
    except AcpError as exc:
        verdict = classify(exc, backend="claude")
        assert verdict.kind == "refusal", exc.raw()
        assert not exc.transient
    else:
        assert stats.stop_reason == "refusal"
    assert claude.mock.conversation_requests()[0].answered == "refusal"


async def test_claude_refusal_ends_with_stop_reason_refusal(claude: Peer) -> None:
    """0.23.1 reports the refusal as an error; the relay folds it onto a refusal stop and keeps
    only what the provider said: its sentence and the model it suggests."""
    stats = await _prompt(claude, "refusal")
    assert stats.stop_reason == "refusal"
    assert stats.refusal is not None
    assert "Usage Policy" in stats.refusal.explanation
    assert stats.refusal.category == ""  # the provider gave no category: left empty, never guessed
