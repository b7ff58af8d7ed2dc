"""Issue 22, the person steers a running turn, through the engine (memory surface, the scripted agent as
a real process): the queued message's receipt offers "Add to the running turn" where the agent takes
``_session/steering`` and "Send now" where it does not, "Cancel" drops it; ``/steer`` adds words to the
turn; ``/stop`` also empties the queue and says how many it dropped."""

from __future__ import annotations

from core.engine import twoway_wording as tw
from core.engine import wording
from core.engine.messages import InboundMessage
from tests.engine.conftest import Relay, RelayFactory, until
from tests.fakes.memory_surface import StoredMessage


async def receipt(r: Relay, count: int = 1) -> StoredMessage:
    found = lambda: [m for m in r.messages() if m.text.startswith("Queued (position")]  # noqa: E731
    await until(lambda: len(found()) >= count, what="the queued message's receipt")
    return found()[count - 1]


async def working(r: Relay, script: str) -> InboundMessage:
    """Send ``script`` (its first line streams "working") and wait until the agent runs that turn."""
    msg = await r.send(script)
    await until(lambda: any("working" in t for t in r.texts()), what="the turn runs at the agent")
    return msg


def button(message: StoredMessage, label: str) -> str:
    [token] = [b.token for b in message.buttons if b.label == label]
    return token


def steering_frames(r: Relay) -> list[str]:
    return ["\n".join(b["text"] for b in f["params"]["prompt"]) for f in r.frames()
            if f.get("method") == "_session/steering"]


async def test_a_queued_message_is_added_to_the_running_turn(relay: RelayFactory) -> None:
    r = await relay("--steering")
    first = await working(r, "text working\nwait_steer\ntext done")
    second = await r.send("use tabs, not spaces")
    queued = await receipt(r)
    assert [b.label for b in queued.buttons] == [tw.ADD_TO_TURN_LABEL, tw.REMOVE_LABEL]
    token = button(queued, tw.ADD_TO_TURN_LABEL)
    result = await r.press(token)
    assert result.outcome == "resolved"
    await r.idle()
    assert steering_frames(r) == ["use tabs, not spaces"]
    assert "steered:use tabs, not spaces" in r.answer(first)
    assert len(r.prompts()) == 1, "the steered message is not answered again as a prompt"
    assert queued.text == tw.steered_text("use tabs, not spaces"), "the transcript shows it was steered"
    assert not queued.buttons
    assert (await r.press(token)).outcome == "expired"
    assert second.message_id not in [u.message.message_id for u in r.engine.journal.unfinished()]


async def test_steer_command_adds_words_directly(relay: RelayFactory) -> None:
    r = await relay("--steering")
    first = await working(r, "text working\nwait_steer\ntext done")
    steer = await r.send("/steer also update the docs")
    await r.idle()
    assert steering_frames(r) == ["also update the docs"]
    assert r.reply_to(steer).text == tw.steered_text("also update the docs")
    assert "steered:also update the docs" in r.answer(first) and "done" in r.answer(first)


async def test_cancel_takes_a_message_out_of_the_queue(relay: RelayFactory) -> None:
    r = await relay("--steering")
    await working(r, "text working\nsleep 1\ntext done")
    await r.send("text never answered")
    queued = await receipt(r)
    await r.press(button(queued, tw.REMOVE_LABEL))
    await r.idle()
    assert len(r.prompts()) == 1
    assert queued.text == tw.receipt_outcome("removed")


async def test_without_steering_send_now_stops_the_turn_and_answers_this_next(relay: RelayFactory) -> None:
    r = await relay()
    first = await working(r, "text working\nhang")
    await r.send("text third")
    await r.send("text second, sent now")
    later = await receipt(r, 2)
    assert [b.label for b in later.buttons] == [tw.SEND_NOW_LABEL, tw.REMOVE_LABEL]
    await r.press(button(later, tw.SEND_NOW_LABEL))
    await r.idle()
    assert "Stopped." in r.answer(first)
    assert r.prompts()[1:] == ["text second, sent now", "text third"]
    assert later.text == tw.receipt_outcome("send_now")
    steer = await r.send("/steer not taken")
    await r.idle()
    assert r.reply_to(steer).text != tw.steered_text("not taken")
    assert r.prompts()[-1] == "not taken", "without a running turn the words are a prompt"


async def test_a_queued_message_whose_turn_begins_loses_its_buttons(relay: RelayFactory) -> None:
    r = await relay()
    await working(r, "text working\nsleep 0.5\ntext done")
    second = await r.send("text second")
    queued = await receipt(r)
    assert queued.buttons
    await r.idle()
    assert "second" in r.answer(second)
    await until(lambda: queued.text == tw.receipt_outcome("answering"), what="the receipt says it is answered")
    assert not queued.buttons
    assert not r.engine.receipts


async def test_steer_on_an_agent_without_steering_waits_in_line(relay: RelayFactory) -> None:
    r = await relay()
    await working(r, "text working\nsleep 0.5\ntext done")
    steer = await r.send("/steer later please")
    assert tw.STEER_UNSUPPORTED in [m.text for m in r.replies_to(steer)]
    await r.idle()
    assert r.prompts() == ["text working\nsleep 0.5\ntext done", "later please"]


async def test_stop_also_drops_the_queue_and_says_how_many(relay: RelayFactory) -> None:
    r = await relay()
    first = await working(r, "text working\nhang")
    await r.send("text two")
    await r.send("text three")
    receipts = [await receipt(r, 1), await receipt(r, 2)]
    stale = button(receipts[0], tw.SEND_NOW_LABEL)
    stop = await r.send("/stop")
    await r.idle()
    assert "Stopped." in r.answer(first)
    assert r.reply_to(stop).text == tw.queue_dropped_text(2)
    assert len(r.prompts()) == 1, "the dropped messages are never answered"
    await until(lambda: all(m.text == tw.receipt_outcome("dropped") for m in receipts),
                what="each receipt says its message was dropped")
    assert not any(m.buttons for m in receipts), "no button is left that could only answer 'expired'"
    assert (await r.press(stale)).outcome == "expired"
    assert not r.engine.receipts, "nothing is kept for settled receipts"
    idle = await r.send("/stop")
    assert r.reply_to(idle).text == wording.NOTHING_TO_STOP
