"""Real agents, plain turns: streamed text and a cancel that really ends a hung model call."""

from __future__ import annotations

import asyncio
import time

import pytest

from core.acp.runtime import AcpRuntime
from core.acp.types import AcpEvent, AcpPromptStats, TextChunk, TurnEnded
from tests.fakes.model_api import MOCK_TEXT, MOCK_TEXT_PARTS
from tests.peers.harness import PROMPT_TIMEOUT_S, REQUEST_TIMEOUT_S, Peer, within

pytestmark = pytest.mark.peer

#: After session/cancel the turn must end well inside this (agents answer within milliseconds).
CANCEL_LATENCY_S = 3.0


async def test_text_turn_streams_the_model_text_and_ends_end_turn(peer: Peer) -> None:
    peer.mock.scenario = "text"
    events: list[AcpEvent] = []

    async def body() -> AcpPromptStats:
        async with await AcpRuntime.start(peer.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            return await session.prompt("say hi", on_event=events.append, timeout_s=PROMPT_TIMEOUT_S)

    stats = await within(body())

    assert stats.stop_reason == "end_turn"
    assert stats.text == MOCK_TEXT
    chunks = [e.text for e in events if isinstance(e, TextChunk) and e.text]
    assert chunks == list(MOCK_TEXT_PARTS), "the mock's deltas arrive as separate chunks, in order"
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].stop_reason == "end_turn"
    turns = peer.mock.conversation_requests()
    assert len(turns) == 1
    assert "say hi" in str(turns[0].body), "the prompt reached the model API"


async def test_cancel_during_a_hung_model_call_ends_the_turn_cancelled(peer: Peer) -> None:
    peer.mock.scenario = "hang"

    async def body() -> tuple[AcpPromptStats, float]:
        async with await AcpRuntime.start(peer.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            turn = asyncio.create_task(session.prompt("say hi", timeout_s=PROMPT_TIMEOUT_S))
            try:
                await peer.mock.wait_for_request(timeout_s=REQUEST_TIMEOUT_S)
                assert not turn.done(), "the turn must still be waiting on the hung model call"
                started = time.monotonic()
                # A generous wait: cancel() would end the turn itself after it, which must not happen.
                await session.cancel(wait_s=10.0)
                stats = await asyncio.wait_for(turn, CANCEL_LATENCY_S)
                return stats, time.monotonic() - started
            finally:
                turn.cancel()

    stats, latency = await within(body())

    assert stats.stop_reason == "cancelled"
    assert latency < CANCEL_LATENCY_S, f"the agent took {latency:.2f}s to end the turn after session/cancel"
    assert peer.mock.conversation_requests()[0].answered == "hang"
