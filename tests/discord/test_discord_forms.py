"""Issue 22 on Discord, through discord.py against the fake gateway and REST API: the agent's form in
a conversation thread (buttons for the choices, toggles with Done, Decline and Cancel), a written answer
as a reply in the thread, a stranger's click, and a stale click answered "expired"."""

from __future__ import annotations

import json
from typing import Any

from tests.discord.harness import ALICE, MALLORY, Relay, RelayFactory, until
from tests.discord.test_discord_approvals import pressed, prompt_message

FORM = {"message": "Which areas?", "schema": {"type": "object", "properties": {
    "areas": {"type": "array", "title": "Areas", "items": {"type": "string", "enum": ["core", "ui"]}},
    "note": {"type": "string", "title": "A note"}}, "required": ["areas", "note"]}}


def card(r: Relay, channel: int, fragment: str) -> dict[str, Any] | None:
    return next((m for m in r.fake.bot_messages(channel)
                 if m["content"].startswith("❓") and fragment in m["content"]), None)


def answer(r: Relay, channel: int) -> dict[str, Any]:
    joined = "\n".join(r.bot_texts(channel))
    result: dict[str, Any] = json.JSONDecoder().raw_decode(joined[joined.index("elicit:") + 7:])[0]
    return result


async def test_a_form_in_a_thread_with_toggles_and_a_written_answer(relay: RelayFactory) -> None:
    r = await relay()
    asked = await r.fake.say(r.channel, ALICE, f"text before\nelicit {json.dumps(FORM)}\ntext after", mention=True)
    await until(lambda: r.fake.thread_for(asked) is not None, "a thread")
    thread = r.fake.thread_for(asked)
    assert thread is not None
    await until(lambda: card(r, thread.id, "Areas") is not None, "the card")
    first = prompt_message(r, thread.id)
    assert [label for label, _ in r.fake.buttons(first)] == ["☐ core", "☐ ui", "Done", "Decline", "Cancel"]
    stranger = await pressed(r, thread.id, MALLORY, first, "Decline")
    assert f"Your user id is {MALLORY}" in stranger["content"]
    await pressed(r, thread.id, ALICE, first, "☐ core")
    await until(lambda: "☑ core" in [lbl for lbl, _ in r.fake.buttons(r.fake.channels[thread.id].messages[
        int(first["id"])])], "the toggle shown")
    await pressed(r, thread.id, ALICE, first, "Done")
    await until(lambda: card(r, thread.id, "A note") is not None, "the next field")
    assert "Answer by replying" in (card(r, thread.id, "A note") or {})["content"]
    await r.fake.say(thread.id, ALICE, "keep it small")
    await until(lambda: any("after" in t for t in r.bot_texts(thread.id)) and r.idle(), "the turn went on")
    assert answer(r, thread.id) == {"action": "accept", "content": {"areas": ["core"], "note": "keep it small"}}
    await until(lambda: "Answered" in r.fake.channels[thread.id].messages[int(first["id"])]["content"])
    settled = r.fake.channels[thread.id].messages[int(first["id"])]
    assert r.fake.buttons(settled) == [] and "• A note: keep it small" in settled["content"]
    stale = await pressed(r, thread.id, ALICE, first, "Cancel")
    assert stale["content"] == "This button has expired, so the tap changed nothing."
    assert len(r.prompts()) == 1, "the written answer was not a prompt"


async def test_steer_and_a_stop_that_drops_the_queue(relay: RelayFactory) -> None:
    r = await relay("--steering")
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text working\nwait_steer\nhang")
    await until(lambda: any("working" in t for t in r.bot_texts(dm)), "the turn runs")
    await r.fake.say(dm, ALICE, "!steer mind the tests")
    await until(lambda: any("steered:mind the tests" in t for t in r.bot_texts(dm)), "the agent took it")
    assert "↪️ Added to the running turn: mind the tests" in r.bot_texts(dm)
    await r.fake.say(dm, ALICE, "text queued one")
    await until(lambda: any(t.startswith("Queued") for t in r.bot_texts(dm)), "the receipt")
    await r.fake.say(dm, ALICE, "!stop")
    await until(lambda: "Also dropped 1 queued message." in r.bot_texts(dm), "the stop said what it dropped")
    await r.settled()
    assert len(r.prompts()) == 1


TABLE_UPDATE = ('update {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", '
                '"text": "Sizes:\\n\\n| Name | Size |\\n|---|--:|\\n| a.py | 12 |\\n| long_name.py | 3400 |\\n"}}')


async def test_a_table_is_an_aligned_code_block(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, TABLE_UPDATE)
    await until(lambda: any("⏱" in t for t in r.bot_texts(dm)) and r.idle(), "the answer")
    [answer] = [t for t in r.bot_texts(dm) if "Sizes" in t]
    assert "```\nName         | Size\n-------------+-----\na.py         |   12\nlong_name.py | 3400\n```" in answer
