"""Faults of the Slack surface, through slack-bolt / slack-sdk against the fake Slack.

* Slack's acknowledgement leaves once the message is journaled, not once it is answered: a turn
  that takes a while does not hold it (Slack wants it within 3 seconds).
* An event whose fields are not what Slack documents is skipped: logged once without its text,
  stored as rejected, acknowledged; the next message is answered.
"""

from __future__ import annotations

import logging
import sqlite3

import pytest

from core.engine.wording import UNADDRESSABLE_NOTE
from tests.fakes.slack_api import BOT_USER, TEAM

from .conftest import CHANNEL, USER, SlackFactory, until

SECRET_TEXT = "the launch code is 0000"


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_slack_is_acknowledged_once_the_message_is_stored_not_once_it_is_answered(
        slack: SlackFactory, mode: str) -> None:
    r = await slack(mode=mode)
    asked = await r.mention("text slow\nsleep 1.5\ntext  done")  # returns once Slack has its acks
    assert [u.message_id for u in r.store.unfinished_inbound()] == [f"{TEAM}:{CHANNEL}:{asked.ts}"], \
        "journaled before the acknowledgement"
    assert not any("done" in t for t in r.bot_texts(asked.ts)), "acknowledged before the answer"
    await until(lambda: any("slow done" in t for t in r.bot_texts(asked.ts)), what="then answered")
    await r.settled(asked.ts)


async def test_an_event_slack_sends_oddly_is_skipped_once_stored_as_rejected_and_the_next_is_answered(
        slack: SlackFactory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    r = await slack()
    odd = r.fake.user_message(USER, CHANNEL, f"<@{BOT_USER}> {SECRET_TEXT}")
    body = r.fake.event_envelope({"type": "app_mention", "user": {"id": USER}, "text": odd.text, "ts": odd.ts,
                                  "channel": CHANNEL, "team": TEAM}, "EvODD")
    await r.fake.push(body)  # acknowledged: Slack will not send it again
    asked = await r.mention("text the next one")
    await until(lambda: any("the next one" in t for t in r.bot_texts(asked.ts)), what="the next one is answered")
    await r.settled(asked.ts)
    assert r.bot_texts(odd.ts) == [] and r.prompts() == ["text the next one"]
    skipped = [rec for rec in caplog.records
               if rec.levelno >= logging.WARNING and "could not be read" in rec.getMessage()]
    assert len(skipped) == 1 and "EvODD" in skipped[0].getMessage()
    assert [rec for rec in caplog.records if rec.levelno > logging.DEBUG and SECRET_TEXT in rec.getMessage()] == []
    assert not r.store.record_inbound("slack", "event:EvODD", "", {}), "stored as rejected"


@pytest.mark.parametrize(("method", "how"), [("chat.postMessage", "no ts"), ("chat.startStream", "no ts"),
                                           ("chat.postMessage", "not json")])
async def test_a_post_slack_answers_without_its_ts_is_marked_never_edited_as_none(
        slack: SlackFactory, method: str, how: str) -> None:
    r = await slack()
    r.fake.streaming = method == "chat.startStream"
    r.fake.answer_oddly(method, how)
    asked = await r.mention("text the beginning\nsleep 0.5\ntext  and the rest")
    await until(lambda: any("⏱" in t for t in r.bot_texts(asked.ts)), what="the answer")
    await r.settled(asked.ts)
    targeted = [p.get("ts") for m, p in r.fake.calls if m in ("chat.update", "chat.appendStream", "chat.stopStream")]
    assert "None" not in targeted and None not in targeted
    texts = r.bot_texts(asked.ts)
    assert "would not accept" not in "".join(texts) and r.store.pending_outbound() == []
    assert texts[0].startswith("the beginning") and "⏱" not in texts[0], r.transcript(asked.ts)
    assert texts[1] == UNADDRESSABLE_NOTE and texts[2].startswith("the beginning and the rest") and len(texts) == 3


async def test_an_ephemeral_answer_without_its_ts_is_taken_as_shown(slack: SlackFactory) -> None:
    r = await slack()
    asked = await r.mention("text hello")
    await r.settled(asked.ts)
    r.fake.answer_oddly("chat.postEphemeral", "no ts")
    await r.reply(asked.ts, "!help")
    await until(lambda: r.fake.ephemerals(USER), what="the help, only for the asker")
    await r.settled(asked.ts)
    assert len(r.fake.ephemerals(USER)) == 1, "shown once, never sent again"
    assert "would not accept" not in "".join(r.bot_texts(asked.ts)) and r.store.pending_outbound() == []


async def test_an_event_the_store_cannot_take_is_not_acknowledged_and_slack_sends_it_again(
        slack: SlackFactory, caplog: pytest.LogCaptureFixture) -> None:
    r = await slack(busy_timeout_s=0.1)
    asked = r.fake.user_message(USER, CHANNEL, f"<@{BOT_USER}> text stored before acknowledged")
    event = r.fake.event_envelope({"type": "app_mention", "user": USER, "text": asked.text, "ts": asked.ts,
                                   "channel": CHANNEL, "team": TEAM})
    blocker = sqlite3.connect(r.store.path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another writer holds the file: journaling fails
    try:
        envelope = await r.fake.send_envelope(event)
        await until(lambda: any("could not be stored" in rec.getMessage() for rec in caplog.records),
                    what="the listener could not store it")
        assert not [rec for rec in caplog.records if rec.exc_info], "a fault the relay expects: no traceback"
        assert envelope not in r.fake.acks, "not acknowledged: it was not stored"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await r.fake.kill_socket()  # Slack sends an unacknowledged event again on the next connection
    await until(lambda: any("stored before acknowledged" in t for t in r.bot_texts(asked.ts)), what="answered")
    await r.settled(asked.ts)
    assert r.prompts() == ["text stored before acknowledged"]
