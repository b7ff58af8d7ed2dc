"""Slack's command spellings: ``!compact`` and ``/compact`` reach the agent as ``/compact``; ``!new``,
``!stop``, ``!status``, ``!help``, ``!model``; anything else (``foo !compact``) is a prompt."""

from __future__ import annotations

import json

from core.engine import wording
from surfaces.slack import wording as slack_wording

from .conftest import CHANNEL, USER, SlackFactory, until


async def test_bang_compact_in_a_thread_reaches_the_agent_as_slash_compact(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text hello")
    await relay.settled(asked.ts)
    await relay.reply(asked.ts, "!compact")
    await until(lambda: len(relay.prompts()) == 2)
    await relay.settled(asked.ts)
    assert relay.prompts() == ["text hello", "/compact"]
    assert wording.COMPACTED in relay.bot_texts(asked.ts)[-1]


async def test_a_mention_that_is_only_compact_is_the_command_too(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("!Compact")
    await until(lambda: relay.prompts() == ["/compact"])
    await relay.settled(asked.ts)


async def test_compact_later_in_a_message_is_a_prompt(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("foo !compact")
    await relay.settled(asked.ts)
    assert relay.prompts() == ["foo !compact"]
    assert relay.bot_texts(asked.ts)[0].startswith("echo: foo !compact")


async def test_the_slash_command_applies_to_the_persons_latest_thread_in_the_channel(slack: SlackFactory) -> None:
    relay = await slack()
    older = await relay.mention("text older")
    await relay.settled(older.ts)
    latest = await relay.mention("text latest")
    await relay.settled(latest.ts)
    ack = await relay.slash("keep the test names")
    assert ack == {"text": slack_wording.COMPACT_SENT}  # acknowledged at once, only to the sender
    await until(lambda: len(relay.prompts()) == 3)
    await relay.settled(latest.ts)
    assert relay.prompts()[-1] == "/compact keep the test names"
    assert wording.COMPACTED in relay.bot_texts(latest.ts)[-1]  # the answer is in that thread
    assert len(relay.bot_texts(older.ts)) == 1


async def test_the_slash_command_without_a_conversation_says_how_to_start_one(slack: SlackFactory) -> None:
    relay = await slack()
    ack = await relay.slash()
    assert ack == {"text": slack_wording.COMPACT_NO_THREAD}
    assert relay.prompts() == []


async def test_new_in_a_thread_starts_the_conversation_afresh(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text one")
    await relay.settled(asked.ts)
    key = relay.key(asked.ts)
    before = relay.store.get_conversation(key)
    assert before is not None and before.session_id
    await relay.reply(asked.ts, "!new")
    await until(lambda: any(wording.NEW_CONVERSATION in t for t in relay.bot_texts(asked.ts)))
    await relay.reply(asked.ts, "text two")
    await until(lambda: len(relay.prompts()) == 2)
    await relay.settled(asked.ts)
    after = relay.store.get_conversation(key)
    assert after is not None and after.session_id and after.session_id != before.session_id


async def test_stop_ends_the_running_answer_and_clears_the_status(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text working on it\nhang")
    await until(lambda: any("working on it" in t for t in relay.bot_texts(asked.ts)))
    assert relay.fake.status_of(CHANNEL, asked.ts) == slack_wording.WORKING_STATUS
    await relay.reply(asked.ts, "!stop")
    await relay.settled(asked.ts)
    [answer] = relay.bot_texts(asked.ts)
    assert answer.startswith("working on it") and wording.STOPPED in answer
    frames = [json.loads(line) for line in (relay.tmp / "record.jsonl").read_text().splitlines()]
    assert any(f.get("method") == "session/cancel" for f in frames)
    assert relay.prompts() == ["text working on it\nhang"]


async def test_status_and_help_are_shown_only_to_the_asker(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text hi")
    await relay.settled(asked.ts)
    await relay.reply(asked.ts, "!status")
    await relay.reply(asked.ts, "!help")
    await until(lambda: len(relay.fake.ephemerals(USER)) == 2)
    status, help_text = (m.shown for m in relay.fake.ephemerals(USER))
    assert "Agent: fake" in status and "Session: " in status
    assert "`!new`" in help_text and "`!compact` or `/compact`" in help_text and "`!stop`" in help_text
    assert len(relay.bot_texts(asked.ts)) == 1  # nothing public was added to the thread


async def test_model_lists_buttons_and_a_press_switches(slack: SlackFactory) -> None:
    relay = await slack(flags=("--models", "small,large"))
    asked = await relay.mention("!model")
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)))
    [offer] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    assert [b["text"]["text"] for b in offer.buttons] == ["small", "large"]
    await relay.press(offer, "large")
    await until(lambda: relay.fake.find(CHANNEL, offer.ts).shown == wording.model_switched_text("large"))
    assert relay.fake.find(CHANNEL, offer.ts).buttons == []
