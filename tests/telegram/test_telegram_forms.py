"""Issue 22 on Telegram, through python-telegram-bot against the fake Bot API: the agent's form as an
inline keyboard (choices, yes/no, toggles with Done, Decline and Cancel), a written answer in the reply
box ``force_reply`` opens, a stale tap, a stranger's tap and reply, and a link shown, never opened."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.telegram_api import FakeBotApi
from tests.telegram.conftest import USER, TgFactory, until
from tests.telegram.test_telegram_buttons import keyboard

FORM = {"message": "How should I refactor?", "schema": {"type": "object", "properties": {
    "strategy": {"type": "string", "title": "Strategy", "enum": ["safe", "bold"]},
    "tests": {"type": "boolean", "title": "Run the tests"},
    "areas": {"type": "array", "title": "Areas", "items": {"type": "string", "enum": ["core", "ui"]}},
    "budget": {"type": "integer", "title": "Budget"}}, "required": ["strategy", "tests", "areas", "budget"]}}
EXPIRED = "This button has expired, so the tap changed nothing."


def card(api: FakeBotApi, fragment: str) -> dict[str, Any] | None:
    return next((m for m in api.bot_messages(USER) if m["text"].startswith("❓") and fragment in m["text"]), None)


async def shown(api: FakeBotApi, fragment: str) -> dict[str, Any]:
    await until(lambda: (c := card(api, fragment)) is not None and keyboard(c), f"the card asking {fragment}")
    found = card(api, fragment)
    assert found is not None
    return found


def tap(api: FakeBotApi, message: dict[str, Any], label: str, *, user: int = USER) -> str:
    [data] = [d for lbl, d in keyboard(message) if lbl == label]
    return api.press(USER, message["message_id"], data, user=user)


def answer(texts: list[str]) -> dict[str, Any]:
    joined = "\n".join(texts)
    result: dict[str, Any] = json.JSONDecoder().raw_decode(joined[joined.index("elicit:") + 7:])[0]
    return result


async def test_a_form_asked_with_buttons_and_the_reply_box(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.say(USER, f"text before\nelicit {json.dumps(FORM)}\ntext after")
    first = await shown(api, "Strategy")
    assert [label for label, _ in keyboard(first)] == ["safe", "bold", "Decline", "Cancel"]
    stale = next(d for lbl, d in keyboard(first) if lbl == "safe")
    stranger = tap(api, first, "bold", user=555)
    await until(lambda: stranger in api.answered)
    assert "555" in str(api.answered[stranger])
    pressed = tap(api, first, "bold")
    await until(lambda: pressed in api.answered)
    yes_no = await shown(api, "Run the tests")
    assert "• Strategy: bold" in yes_no["text"]
    tap(api, yes_no, "Yes")
    areas = await shown(api, "Areas")
    tap(api, areas, "☐ ui")
    await until(lambda: "☑ ui" in [lbl for lbl, _ in keyboard(api.messages[(USER, areas["message_id"])])])
    tap(api, areas, "Done")
    await shown(api, "Budget")
    await until(lambda: any(m["text"] == "✍️ Budget" and m.get("_force_reply", {}).get("force_reply")
                            for m in api.bot_messages(USER)), "the reply box opened")
    box = next(m for m in api.bot_messages(USER) if m["text"] == "✍️ Budget")
    api.say(USER, "many", reply_to=box["message_id"])
    await until(lambda: any("is not a whole number" in m["text"] for m in api.bot_messages(USER)), "asked again")
    api.say(USER, "7", reply_to=box["message_id"])
    await until(lambda: any("after" in t for t in r.texts(USER)), "the turn went on")
    await r.settled()
    assert answer(r.texts(USER)) == {"action": "accept", "content": {"strategy": "bold", "tests": True,
                                                                     "areas": ["ui"], "budget": 7}}
    await until(lambda: "Answered" in api.messages[(USER, first["message_id"])]["text"], "the card settled")
    settled = api.messages[(USER, first["message_id"])]
    assert not keyboard(settled) and "• Budget: 7" in settled["text"]
    late = api.press(USER, first["message_id"], stale)
    await until(lambda: late in api.answered)
    assert api.answered[late] == EXPIRED
    assert len(r.prompts()) == 1, "no answer became a prompt"


async def test_a_link_is_shown_with_done_and_decline_reaches_the_agent(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.say(USER, "text before\nelicit_url https://example.com/login Sign in to GitHub\ntext after")
    link = await shown(api, "example.com")
    assert "https://example.com/login" in link["text"] and "Sign in to GitHub" in link["text"]
    assert [label for label, _ in keyboard(link)] == ["Done", "Decline", "Cancel"]
    tap(api, link, "Decline")
    await until(lambda: any("after" in t for t in r.texts(USER)), "the turn went on")
    await r.settled()
    assert answer(r.texts(USER)) == {"action": "decline"}
    await until(lambda: "Declined" in api.messages[(USER, link["message_id"])]["text"])


async def test_a_queued_message_is_steered_into_the_running_turn(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg("--steering")
    api.private(USER)
    api.say(USER, "text working\nwait_steer\ntext done")
    await until(lambda: "session/prompt" in r.methods(), "the turn runs at the agent")  # (a draft, in private)
    api.say(USER, "use tabs")
    await until(lambda: any(m["text"].startswith("Queued") and keyboard(m) for m in api.bot_messages(USER)),
                "the receipt")
    receipt = next(m for m in api.bot_messages(USER) if m["text"].startswith("Queued"))
    assert [label for label, _ in keyboard(receipt)] == ["Add to the running turn", "Cancel"]
    stranger = tap(api, receipt, "Add to the running turn", user=555)
    await until(lambda: stranger in api.answered)
    assert "555" in str(api.answered[stranger])
    tap(api, receipt, "Add to the running turn")
    await until(lambda: any("steered:use tabs" in t for t in r.texts(USER)), "the agent took it")
    await r.settled()
    shown = api.messages[(USER, receipt["message_id"])]
    assert shown["text"] == "↪️ Added to the running turn: use tabs" and not keyboard(shown)
    assert len(r.prompts()) == 1


async def test_a_table_is_an_aligned_preformatted_block(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.say(USER, 'update {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", '
                  '"text": "| Name | Size |\\n|---|---|\\n| a.py | 12 |\\n| long_name.py | 3400 |\\n"}}')
    await until(lambda: any("Name" in m.get("text", "") for m in api.bot_messages(USER)), "the answer")
    await r.settled()
    [answer] = [m for m in api.bot_messages(USER) if "Name" in m.get("text", "")]
    assert "Name         | Size\n-------------+-----\na.py         | 12  \nlong_name.py | 3400" in answer["text"]
    assert any(e["type"] == "pre" for e in answer["entities"]), "shown in a monospace block"
