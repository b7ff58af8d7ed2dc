"""Issue 22 on Slack, through slack_bolt / slack_sdk against the fake Web API: the agent's form in the
conversation's thread (Block Kit buttons for the choices and yes/no, Decline and Cancel), a number
answered by a thread reply and asked again when it is not one, and a stale press answered privately."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from core.engine import wording

from .conftest import CHANNEL, STRANGER, USER, SlackFactory, until

FORM = {"message": "Deploy now?", "schema": {"type": "object", "properties": {
    "go": {"type": "boolean", "title": "Deploy"},
    "replicas": {"type": "integer", "title": "Replicas", "minimum": 1}}, "required": ["go", "replicas"]}}


def answer(texts: list[str]) -> dict[str, Any]:
    joined = "\n".join(texts)
    result: dict[str, Any] = json.JSONDecoder().raw_decode(joined[joined.index("elicit:") + 7:])[0]
    return result


async def test_a_form_in_the_thread_with_buttons_and_a_thread_reply(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention(f"text before\nelicit {json.dumps(FORM)}\ntext after")
    await until(lambda: any(m.buttons and "Deploy" in m.shown for m in relay.fake.bot_messages(CHANNEL, asked.ts)))
    [card] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    assert [b["text"]["text"] for b in card.buttons] == ["Yes", "No", "Decline", "Cancel"]
    stale = dataclasses.replace(card, blocks=json.loads(json.dumps(card.blocks)))
    await relay.press(card, "Yes", user=STRANGER, trigger_id="t-stranger")
    await until(lambda: len(relay.fake.ephemerals(STRANGER)) == 1)
    assert STRANGER in relay.fake.ephemerals(STRANGER)[0].shown
    await relay.press(card, "Yes", trigger_id="t-yes")
    await until(lambda: "Replicas" in relay.fake.find(CHANNEL, card.ts).shown)
    assert "Answer by replying" in relay.fake.find(CHANNEL, card.ts).shown
    await relay.reply(asked.ts, "zero")
    await until(lambda: any("is not a whole number" in t for t in relay.bot_texts(asked.ts)), "asked again")
    await relay.reply(asked.ts, "0")
    await until(lambda: any("at least 1" in t for t in relay.bot_texts(asked.ts)), "asked again, with the minimum")
    await relay.reply(asked.ts, "3")
    await until(lambda: any("after" in t for t in relay.bot_texts(asked.ts)), "the turn went on")
    await relay.settled(asked.ts)
    assert answer(relay.bot_texts(asked.ts)) == {"action": "accept", "content": {"go": True, "replicas": 3}}
    await until(lambda: "Answered" in relay.fake.find(CHANNEL, card.ts).shown)
    assert relay.fake.find(CHANNEL, card.ts).buttons == []
    await relay.press(stale, "No", trigger_id="t-late")
    await until(lambda: len(relay.fake.ephemerals(USER)) >= 1)
    assert relay.fake.ephemerals(USER)[-1].shown == wording.PRESS_EXPIRED
    assert len(relay.prompts()) == 1, "no answer became a prompt"


async def test_send_now_stops_the_turn_of_an_agent_without_steering(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text working\nhang")
    await until(lambda: any("working" in t for t in relay.bot_texts(asked.ts)))
    await relay.reply(asked.ts, "text answered next")
    await until(lambda: any(m.buttons and m.shown.startswith("Queued") for m in
                            relay.fake.bot_messages(CHANNEL, asked.ts)))
    [receipt] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    assert [b["text"]["text"] for b in receipt.buttons] == ["Send now", "Cancel"]
    await relay.press(receipt, "Send now", trigger_id="t-now")
    await until(lambda: any("answered next" in t for t in relay.bot_texts(asked.ts)))
    await relay.settled(asked.ts)
    assert "Stopped." in "\n".join(relay.bot_texts(asked.ts))
    assert relay.prompts()[-1] == "text answered next"
    await until(lambda: "Sent next" in relay.fake.find(CHANNEL, receipt.ts).shown)


async def test_a_table_is_an_aligned_code_block(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention('update {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", '
                                '"text": "| Name | Size |\\n|---|---|\\n| a.py | 12 |\\n"}}')
    await relay.settled(asked.ts)
    [answer] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if "Name" in m.shown]
    assert "```\nName | Size\n-----+-----\na.py | 12\n```" in answer.shown, answer
