"""Issue 22 with the real agents (claude-agent-acp 0.101, codex-acp 2.6) against the loopback model
API mock: the relay offers forms and links in ``initialize``; the agents say they take steering, and a
message added to a running turn reaches them as ``_session/steering``, which they take."""

from __future__ import annotations

import pytest

from core.engine import twoway_wording as tw
from tests.engine.conftest import until
from tests.fakes.memory_surface import StoredMessage
from tests.peers.harness import PEER_TEST_TIMEOUT_S, Peer, within
from tests.peers.relay import PeerRelay

pytestmark = pytest.mark.peer

def steers(peer: Peer) -> bool:
    return peer.key == "claude-0.101.0" or peer.key.startswith("codex-2")


async def test_forms_and_links_are_offered_and_steering_is_read(relay, peer: Peer) -> None:
    r = await relay(peer)
    await within(r.ask("say hi"))
    [init] = [f for f in peer.frames() if f.get("method") == "initialize"]
    assert init["params"]["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}
    session = r.conv().session
    assert session is not None
    assert session.runtime.steering == steers(peer), peer.key


async def test_a_queued_message_is_added_to_the_running_turn(relay, peer: Peer) -> None:
    if not steers(peer):
        pytest.skip(f"{peer.key} does not take steering")
    peer.mock.scenario = "hang"  # the model call hangs: the turn stays open
    r = await relay(peer)
    first = await r.send("say hi")
    await until(lambda: r.conv().session is not None and r.conv().session.busy, what="the turn running",
                timeout=PEER_TEST_TIMEOUT_S)
    await r.send("also mention the weather")
    queued = await until_receipt(r)
    [steer] = [b.token for b in queued.buttons if b.label == tw.ADD_TO_TURN_LABEL]
    result = await within(r.press(steer))
    assert result.text == tw.steered_text("also mention the weather"), result.text
    steered = [f for f in peer.frames() if f.get("method") == "_session/steering"]
    assert len(steered) == 1
    assert "also mention the weather" in str(steered[0]["params"]["prompt"])
    await r.send("/stop")
    await r.idle()
    assert "Stopped." in r.answer(first)


async def until_receipt(r: PeerRelay) -> StoredMessage:
    found = lambda: [m for m in r.messages() if m.text.startswith("Queued (position") and m.buttons]  # noqa: E731
    await until(lambda: found(), what="the receipt", timeout=PEER_TEST_TIMEOUT_S)
    return found()[0]


async def test_claude_asks_its_question_as_a_form_and_gets_the_answer(relay, claude: Peer) -> None:
    """claude-agent-acp 0.101 shows its AskUserQuestion tool as an ACP form (0.23 has no forms)."""
    if claude.key != "claude-0.101.0":
        pytest.skip(f"{claude.key} has no forms")
    claude.mock.scenario = "ask"
    r = await relay(claude)
    msg = await r.send("plan the refactor")
    await until(lambda: any(m.text.startswith("❓") and m.buttons for m in r.messages()), what="the form",
                timeout=PEER_TEST_TIMEOUT_S)
    card = next(m for m in r.messages() if m.text.startswith("❓"))
    assert "Which approach?" in card.text
    labels = [b.label for b in card.buttons]
    assert "Small steps" in labels and "Decline" in labels and "Cancel" in labels, labels
    [small] = [b.token for b in card.buttons if b.label == "Small steps"]
    await r.press(small)
    for _ in range(10):  # then the optional fields (claude's "other" box): skipped
        form = r.engine.forms.open_in(r.conv().key)
        if form is None:
            break
        index = form.index
        skip = next((b.token for b in form.buttons() if b.label == tw.SKIP_LABEL), None)
        assert skip is not None, [m.text for m in r.messages()]
        await r.press(skip)
        await until(lambda f=form, i=index: f.index > i or f.result.done(), what="the next field")
    await r.idle()
    assert "answered:" in r.answer(msg) and "Small steps" in r.answer(msg), r.answer(msg)
    asked = [f for f in claude.frames("agent->client") if f.get("method") == "elicitation/create"]
    assert len(asked) == 1 and asked[0]["params"]["mode"] == "form"

