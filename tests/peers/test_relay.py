"""Real agents through a real Engine (as a chat shows them): failed model calls become prose, the
ladder retries what is transient, and no raw provider text is ever shown, not even while streaming.

The prompts are counted on the agent's own stdin (its capture): what the relay decided, whatever
the agent did with its model calls (claude-agent-acp 0.101 retries them by itself).
"""

from __future__ import annotations

import pytest

from core.engine import wording
from tests.fakes.model_api import MOCK_TEXT
from tests.peers.harness import Peer, within
from tests.peers.relay import ATTEMPTS, PeerRelay

pytestmark = pytest.mark.peer

#: Provider words that must never reach a chat: raw JSON bodies, status lines, agent prefixes.
RAW = ("invalid_request_error", "rate_limit", "Too Many Requests", "exceeded retry limit", "API Error",
       '{"', "req_mock", "INVALID_ARGUMENT")


def watch(r: PeerRelay) -> list[str]:
    """Every text the surface is sent from now on, posts and edits alike."""
    shown: list[str] = []
    r.surface.observers.append(lambda method, key, text: shown.append(text))
    return shown


def raw_in(texts: list[str]) -> list[str]:
    return [f"{word!r} in {text!r}" for text in texts for word in RAW if word in text]


async def test_429_is_retried_on_the_ladder_then_explained(relay, peer: Peer) -> None:
    """claude 0.23.1 answers the retried prompts with an empty end_turn; codex 2.6 with end_turn
    after a systemError: both count as the rate limit again, so all four climb the whole ladder."""
    peer.mock.scenario = "429"
    r = await relay(peer)
    shown = watch(r)
    reply = await within(r.ask("say hi"))
    assert peer.prompts() == ATTEMPTS, reply.text
    assert "rate-limiting" in reply.text
    assert reply.text.count(wording.retry_gave_up(ATTEMPTS)) == 1
    assert wording.EMPTY_ANSWER not in reply.text
    assert not raw_in(shown), raw_in(shown)


async def test_400_is_the_malformed_prose_at_once(relay, peer: Peer) -> None:
    peer.mock.scenario = "400"
    r = await relay(peer)
    shown = watch(r)
    reply = await within(r.ask("say hi"))
    assert peer.prompts() == 1, "malformed is terminal"
    assert "malformed" in reply.text and "/compact" in reply.text
    assert "Retrying" not in reply.text
    assert not raw_in(shown), raw_in(shown)


async def test_a_text_turn_reaches_the_chat(relay, peer: Peer) -> None:
    r = await relay(peer)
    reply = await within(r.ask("say hi"))
    assert MOCK_TEXT in reply.text
    assert peer.prompts() == 1


async def test_a_refusal_shows_its_explanation_once_and_the_card_once(relay, claude: Peer) -> None:
    claude.mock.scenario = "refusal"
    r = await relay(claude)
    reply = await within(r.ask("say hi"))
    assert claude.prompts() == 1, "a refusal is never retried"
    assert reply.text.count(wording.REFUSAL_LEAD) == 1
    explanation = "Usage Policy" if claude.key == "claude-0.23.1" else "safeguards flagged this message"
    assert reply.text.count(explanation) == 1, reply.text


async def test_gemini_error_turn_is_prose(relay, gemini: Peer) -> None:
    gemini.mock.scenario = "400"
    r = await relay(gemini)
    shown = watch(r)
    reply = await within(r.ask("say hi"))
    assert "malformed" in reply.text
    assert not raw_in(shown), raw_in(shown)
