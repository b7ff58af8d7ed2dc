"""Real agents, plain turns: streamed text, the backend detected, a cancel that really ends a hung model call."""

from __future__ import annotations

import asyncio

import pytest

from core.acp.runtime import AcpRuntime
from core.acp.types import AcpEvent, AcpPromptStats, TextChunk, TurnEnded
from tests.fakes.model_api import MOCK_TEXT, MOCK_TEXT_PARTS
from tests.peers.harness import PROMPT_TIMEOUT_S, REQUEST_TIMEOUT_S, Peer, within

pytestmark = pytest.mark.peer

#: A hang guard: after session/cancel agents end the turn within milliseconds, and our own forced
#: end (cancel's wait) comes far later, so a turn that ends inside this was ended by the agent.
CANCEL_GUARD_S = 5.0


async def _text_turn(peer: Peer) -> tuple[AcpPromptStats, list[AcpEvent], str]:
    peer.mock.scenario = "text"
    events: list[AcpEvent] = []

    async def body() -> tuple[AcpPromptStats, str]:
        async with await AcpRuntime.start(peer.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            stats = await session.prompt("say hi", on_event=events.append, timeout_s=PROMPT_TIMEOUT_S)
            return stats, rt.backend

    stats, backend = await within(body())
    return stats, events, backend


async def test_text_turn_streams_the_model_text_and_ends_end_turn(peer: Peer) -> None:
    stats, events, backend = await _text_turn(peer)

    assert backend == peer.name, "detected from the agent's agentInfo.name (the config names none)"
    assert stats.stop_reason == "end_turn"
    assert stats.text == MOCK_TEXT
    chunks = [e.text for e in events if isinstance(e, TextChunk) and e.text]
    assert chunks == list(MOCK_TEXT_PARTS), "the mock's deltas arrive as separate chunks, in order"
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].stop_reason == "end_turn"
    turns = peer.mock.conversation_requests()
    assert len(turns) == 1
    assert "say hi" in str(turns[0].body), "the prompt reached the model API"
    assert peer.prompts() == 1


async def test_gemini_text_turn(gemini: Peer) -> None:
    stats, _events, backend = await _text_turn(gemini)
    assert (backend, stats.stop_reason, stats.text) == ("gemini", "end_turn", MOCK_TEXT)
    assert [r.path for r in gemini.mock.conversation_requests()] == [
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent"]


async def _cancel_hung_call(peer: Peer) -> AcpPromptStats:
    peer.mock.scenario = "hang"

    async def body() -> AcpPromptStats:
        async with await AcpRuntime.start(peer.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            turn = asyncio.create_task(session.prompt("say hi", timeout_s=PROMPT_TIMEOUT_S))
            try:
                await peer.mock.wait_for_request(timeout_s=REQUEST_TIMEOUT_S)
                assert not turn.done(), "the turn must still be waiting on the hung model call"
                # A generous wait: cancel() would end the turn itself after it, which must not happen.
                await session.cancel(wait_s=30.0)
                assert not session.unresponsive, "the agent ended the turn, not our cancel's deadline"
                return await asyncio.wait_for(turn, CANCEL_GUARD_S)
            finally:
                turn.cancel()

    return await within(body())


async def test_cancel_during_a_hung_model_call_ends_the_turn_cancelled(peer: Peer) -> None:
    stats = await _cancel_hung_call(peer)

    assert stats.stop_reason == "cancelled"
    assert peer.mock.conversation_requests()[0].answered == "hang"


async def test_gemini_cancel_during_a_hung_model_call(gemini: Peer) -> None:
    stats = await _cancel_hung_call(gemini)
    assert stats.stop_reason == "cancelled"
    assert gemini.mock.conversation_requests()[0].answered == "hang"
