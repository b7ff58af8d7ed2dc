"""Slack while the relay's store cannot journal a message (its disk is full: SQLITE_FULL, made with
``tests.full_store``), in both modes. The relay holds the message from the first refusal and offers it
to the store again until there is room, so it is answered as soon as there is, not at Slack's next
delivery. Slack delivers an event four times at most (``retry_attempt`` / ``X-Slack-Retry-Num`` 0 to
3): the first three are not acknowledged while the store refuses (Slack sends it again), the last is.
Its person is told once, not on every delivery; it is answered once, and nothing is logged with a
traceback."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from pathlib import Path

import pytest

from core.store.records import STORE_AWAY_HELD, STORE_FAILED_HELD, STORE_FULL_HELD
from tests.fakes.slack_api import SlackMessage
from tests.full_store import LONG_TEXT, fill, locked, make_room

from .conftest import BOT_USER, CHANNEL, DM, FAST, TEAM, USER, SlackFactory, SlackRelayUnderTest, delivered, until

HELD_FAST = dataclasses.replace(FAST, held_retry_s=(0.02, 0.05))


async def _full_store_and_a_dm(slack: SlackFactory, mode: str, caplog: pytest.LogCaptureFixture
                               ) -> tuple[SlackRelayUnderTest, SlackMessage, dict[str, object]]:
    """A relay whose store is full, and the event of a DM its disk cannot take (longer than a page)."""
    caplog.set_level(logging.INFO)
    relay = await slack(mode=mode, timings=HELD_FAST)
    fill(relay.store)
    msg = relay.fake.user_message(USER, DM, LONG_TEXT)
    event = {"type": "message", "channel_type": "im", "user": USER, "text": LONG_TEXT, "ts": msg.ts, "channel": DM,
             "team": TEAM, "event_ts": msg.ts}
    return relay, msg, event


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_message_the_full_store_refused_is_held_at_slacks_last_delivery_and_answered_once(
        slack: SlackFactory, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    relay, msg, event = await _full_store_and_a_dm(slack, mode, caplog)
    refused = [await delivered(relay, event, retry, caplog) for retry in range(3)]
    assert refused == [False, False, False], "not acknowledged: Slack sends it again"
    assert relay.prompts() == []
    assert await delivered(relay, event, 3, caplog), "Slack's last delivery is acknowledged: the relay holds it"
    await until(lambda: relay.bot_texts(msg.ts, DM), "told")
    assert relay.bot_texts(msg.ts, DM) == [STORE_FULL_HELD], "told once, not on every delivery"
    assert sum("held, and offered to the store again" in rec.getMessage() for rec in caplog.records) == 1
    make_room(relay.store)
    await until(lambda: relay.prompts() == [LONG_TEXT], "answered once there is room")
    await relay.settled(msg.ts, DM)
    texts = relay.bot_texts(msg.ts, DM)
    assert texts[0] == STORE_FULL_HELD and texts.count(STORE_FULL_HELD) == 1, texts
    assert any(t.startswith("echo: hello") for t in texts[1:]), texts
    assert relay.prompts() == [LONG_TEXT], "answered once"
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


async def test_a_relay_stopped_while_it_holds_a_message_says_in_its_log_that_it_is_lost(
        slack: SlackFactory, caplog: pytest.LogCaptureFixture) -> None:
    """Slack will not send it again, and the store never took it: the one loss the relay cannot avoid is
    named in the log (one warning, no traceback), and the stop does not wait for the store."""
    relay, msg, event = await _full_store_and_a_dm(slack, "socket", caplog)
    assert await delivered(relay, event, 3, caplog)
    await until(lambda: "held, and offered to the store again" in caplog.text, "held")
    await relay.close()
    [lost] = [rec for rec in caplog.records if "it is lost" in rec.getMessage()]
    assert lost.levelno == logging.WARNING and msg.ts.replace(".", "") in lost.getMessage().replace(".", "")
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_message_held_is_answered_once_the_store_has_room_before_slack_sends_it_again(
        slack: SlackFactory, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    """Slack's next delivery would come a minute later: the relay answers as soon as there is room, and
    that delivery, finding the message journaled, is acknowledged and answers nothing twice."""
    relay, msg, event = await _full_store_and_a_dm(slack, mode, caplog)
    assert not await delivered(relay, event, 0, caplog), "not acknowledged while the store refuses"
    make_room(relay.store)
    await until(lambda: relay.prompts() == [LONG_TEXT], "answered once there is room, with no new delivery")
    await relay.settled(msg.ts, DM)
    assert await delivered(relay, event, 1, caplog), "Slack's next delivery is acknowledged"
    await relay.settled(msg.ts, DM)
    assert relay.prompts() == [LONG_TEXT], "answered once"
    texts = relay.bot_texts(msg.ts, DM)
    assert texts.count(STORE_FULL_HELD) == 1 and sum(t.startswith("echo: hello") for t in texts) == 1, texts
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_repeat_refused_after_the_held_message_was_saved_is_acknowledged_and_told_nobody(
        slack: SlackFactory, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    """A store that flaps (another writer holds the file, lets go, holds it again): the relay holds the
    refused message and saves it once the file is free; Slack's next delivery comes while the file is
    held again. It repeats a message already journaled: acknowledged, nobody told twice, answered once."""
    caplog.set_level(logging.INFO)
    relay = await slack(mode=mode, timings=HELD_FAST, busy_timeout_s=0.1)
    msg = relay.fake.user_message(USER, DM, "text flapping store")
    event = {"type": "message", "channel_type": "im", "user": USER, "text": msg.text, "ts": msg.ts, "channel": DM,
             "team": TEAM, "event_ts": msg.ts}
    with locked(relay.store.path):
        assert not await delivered(relay, event, 0, caplog), "not acknowledged while the store refuses"
    await until(lambda: relay.prompts() == [msg.text], "answered once the store takes it")
    await relay.settled(msg.ts, DM)
    with locked(relay.store.path):
        assert await delivered(relay, event, 1, caplog), "Slack's repeat of a message the relay saved is acknowledged"
    await relay.settled(msg.ts, DM)
    texts = relay.bot_texts(msg.ts, DM)
    held = [t for t in texts if t in {STORE_FULL_HELD, STORE_AWAY_HELD, STORE_FAILED_HELD}]
    assert len(held) == 1 and sum("flapping store" in t for t in texts) == 1, texts
    assert relay.prompts() == [msg.text], "answered once"
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_thread_reply_the_held_store_refuses_at_every_delivery_is_held_at_the_last_and_answered(
        slack: SlackFactory, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    """Another writer holds the store through all four of Slack's deliveries of a mention in a channel,
    so even the relay's note of the thread is refused: the message is still held at the last delivery,
    its person told once, and it is answered once the file is free."""
    caplog.set_level(logging.INFO)
    relay = await slack(mode=mode, timings=HELD_FAST, busy_timeout_s=0.1)
    msg = relay.fake.user_message(USER, CHANNEL, f"<@{BOT_USER}> text held through every delivery")
    event = {"type": "app_mention", "user": USER, "text": msg.text, "ts": msg.ts, "channel": CHANNEL, "team": TEAM,
             "event_ts": msg.ts}
    with locked(relay.store.path):
        acked = [await delivered(relay, event, retry, caplog) for retry in range(4)]
        assert acked == [False, False, False, True], "only Slack's last delivery is acknowledged"
        await until(lambda: relay.bot_texts(msg.ts), "told")
    await until(lambda: relay.prompts() == ["text held through every delivery"], "answered once the file is free")
    await relay.settled(msg.ts)
    texts = relay.bot_texts(msg.ts)
    held = [t for t in texts if t in {STORE_FULL_HELD, STORE_AWAY_HELD, STORE_FAILED_HELD}]
    assert len(held) == 1 and sum("held through every delivery" in t for t in texts) == 1, texts
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


async def _flap(path: str | Path, stop: asyncio.Event) -> None:
    """Another writer holds the store's file 0.3 s, lets it go 0.2 s, again, until ``stop``."""
    while not stop.is_set():
        with locked(path):
            await asyncio.sleep(0.3)
        await asyncio.sleep(0.2)


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_replies_in_a_thread_while_the_store_flaps_are_answered_in_the_order_written(
        slack: SlackFactory, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    """The store is held and let go again and again while a person writes six replies in one thread. A
    reply the store refused is held; one written after it waits behind it, not journaled ahead of it
    (the agent read them swapped: 1, 0, 3, 2, 5, 4). Each is answered once, in order, with one notice."""
    caplog.set_level(logging.INFO)
    relay = await slack(mode=mode, timings=dataclasses.replace(FAST, held_retry_s=(0.2, 1.0)), busy_timeout_s=0.05)
    top = await relay.dm("text first")
    await until(lambda: relay.prompts() == ["text first"], "the thread is answered once")
    await relay.settled(top.ts, DM)
    written = [f"text answer number {i}\nsleep 0.1\ntext  end {i}" for i in range(6)]
    stop = asyncio.Event()
    flapping = asyncio.create_task(_flap(relay.store.path, stop))
    try:
        for text in written:
            msg = relay.fake.user_message(USER, DM, text, top.ts)
            event = {"type": "message", "channel_type": "im", "user": USER, "text": text, "ts": msg.ts,
                     "thread_ts": top.ts, "channel": DM, "team": TEAM, "event_ts": msg.ts}
            body = relay.fake.event_envelope(event)
            if mode == "socket":
                await relay.fake.send_envelope(body)  # a refused one is held: not waited for here
            else:
                raw = json.dumps(body).encode()
                await relay.fake.post_http(raw, relay.fake.signed_headers(raw))
            await asyncio.sleep(0.3)
        await until(lambda: "held, and offered to the store again" in caplog.text, "a reply was held")
    finally:
        stop.set()
        await flapping
    await until(lambda: len(relay.prompts()) == 1 + len(written), "every reply reached the agent")
    await relay.settled(top.ts, DM)
    assert relay.prompts() == ["text first", *written], "each once, in the order written"
    texts = relay.bot_texts(top.ts, DM)
    answers = [t.split("\n")[0] for t in texts if t.startswith("answer number")]
    assert answers == [f"answer number {i} end {i}" for i in range(6)], texts
    assert sum(t in {STORE_FULL_HELD, STORE_AWAY_HELD, STORE_FAILED_HELD} for t in texts) == 1, texts
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelno >= logging.ERROR], "an error was logged"


async def test_a_delivery_in_the_thread_ends_the_holds_pause_once_the_store_is_back(
        slack: SlackFactory, caplog: pytest.LogCaptureFixture) -> None:
    """Two replies held in one thread while the store was held, the hold pausing 30 s between offers.
    Once the file is free, Slack delivers the first again: it is taken at once, and that delivery ends
    the hold's pause, so the second is answered now, not half a minute later."""
    caplog.set_level(logging.INFO)
    relay = await slack(timings=dataclasses.replace(FAST, held_retry_s=(30.0, 30.0)), busy_timeout_s=0.05)
    top = await relay.dm("text first")
    await relay.settled(top.ts, DM)
    events = []
    for text in ("text reply one", "text reply two"):
        msg = relay.fake.user_message(USER, DM, text, top.ts)
        events.append({"type": "message", "channel_type": "im", "user": USER, "text": text, "ts": msg.ts,
                       "thread_ts": top.ts, "channel": DM, "team": TEAM, "event_ts": msg.ts})
    with locked(relay.store.path):
        assert [await delivered(relay, event, 0, caplog) for event in events] == [False, False], "both held"
    assert await delivered(relay, events[0], 1, caplog), "the first, delivered again, is taken"
    answered = ["text first", "text reply one", "text reply two"]
    await until(lambda: relay.prompts() == answered, "both answered, in order")
    await relay.settled(top.ts, DM)
    await relay.deliver(events[1], retry=1)  # waits for its acknowledgement
    await relay.settled(top.ts, DM)
    assert relay.prompts() == answered, "each answered once"
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"
