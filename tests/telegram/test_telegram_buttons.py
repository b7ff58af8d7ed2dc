"""Inline keyboards: approvals with one-time callback data, every press answered, stale and foreign
taps answered "expired" and changing nothing; the model list's buttons."""

from __future__ import annotations

from typing import Any

from tests.fakes.telegram_api import FakeBotApi
from tests.telegram.conftest import GROUP, USER, TgFactory, TgRelay, until

ASKS = "text checking\npermission p1\ntext done"


def keyboard(message: dict[str, Any]) -> list[tuple[str, str]]:
    return [(b["text"], b["callback_data"]) for row in message.get("reply_markup", {}).get("inline_keyboard", [])
            for b in row]


def prompt_of(api: FakeBotApi, chat: int, topic: int | None = None) -> dict[str, Any] | None:
    return next((m for m in api.bot_messages(chat, topic) if m["text"].startswith("The agent wants to run")), None)


async def asked(api: FakeBotApi, r: TgRelay, chat: int, topic: int | None = None) -> dict[str, Any]:
    await until(lambda: (p := prompt_of(api, chat, topic)) is not None and keyboard(p), "the approval prompt")
    prompt = prompt_of(api, chat, topic)
    assert prompt is not None
    return prompt


async def test_allow_once_answers_the_press_edits_the_prompt_and_a_second_tap_is_expired(
        api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.say(USER, ASKS)
    prompt = await asked(api, r, USER)
    buttons = keyboard(prompt)
    assert [label for label, _ in buttons] == ["Allow once", "Allow `p1` for this session", "Deny"]
    assert all(0 < len(data.encode()) <= 64 for _, data in buttons)
    assert len({data for _, data in buttons}) == 3
    first = api.press(USER, prompt["message_id"], buttons[0][1])
    await until(lambda: first in api.answered)
    assert api.answered[first] is not None and api.answered[first].startswith("Allowed once")
    await until(lambda: any("permission:selected:allow-once" in t for t in r.texts(USER)), "the tool ran")
    await until(lambda: not keyboard(api.messages[(USER, prompt["message_id"])]), "the buttons are gone")
    settled = api.messages[(USER, prompt["message_id"])]
    assert "Allowed once" in settled["text"]
    edits = settled.get("_edits", 0)
    again = api.press(USER, prompt["message_id"], buttons[2][1])  # Deny, after the decision
    await until(lambda: again in api.answered)
    await r.settled()
    assert api.answered[again] == "This button has expired, so the tap changed nothing."
    assert api.messages[(USER, prompt["message_id"])].get("_edits", 0) == edits, "a stale tap edits nothing"
    outcomes = [f for f in r.frames() if "result" in f and isinstance(f["result"], dict) and "outcome" in f["result"]]
    assert len(outcomes) == 1, "the agent got one answer"


async def test_deny_and_a_tap_from_another_conversation_or_person(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.group(GROUP, forum=True)
    here, there = api.topic(GROUP, "here"), api.topic(GROUP, "there")
    api.say(GROUP, f"@relay_bot {ASKS}", user=USER, topic=here)
    prompt = await asked(api, r, GROUP, here)
    deny = keyboard(prompt)[2][1]
    api.say(GROUP, "@relay_bot text elsewhere", user=USER, topic=there)
    await until(lambda: any("⏱" in m["text"] for m in api.bot_messages(GROUP, there)))
    elsewhere = api.bot_messages(GROUP, there)[0]
    foreign = api.press(GROUP, elsewhere["message_id"], deny, user=USER)  # this prompt's token, tapped in another topic
    stranger = api.press(GROUP, prompt["message_id"], deny, user=555)
    garbage = api.press(GROUP, prompt["message_id"], "not-a-token", user=USER)
    await until(lambda: {foreign, stranger, garbage} <= set(api.answered))
    assert api.answered[foreign] == api.answered[garbage] == "This button has expired, so the tap changed nothing."
    assert "555" in str(api.answered[stranger])
    assert keyboard(api.messages[(GROUP, prompt["message_id"])]), "still waiting for the person's answer"
    mine = api.press(GROUP, prompt["message_id"], deny, user=USER)
    await until(lambda: mine in api.answered)
    assert str(api.answered[mine]).startswith("Denied")
    await until(lambda: any("permission:selected:reject" in m["text"] for m in api.bot_messages(GROUP, here)))
    await r.settled()
    assert set(api.answered) == {foreign, stranger, garbage, mine}, "every press answered once"


async def test_model_without_a_name_lists_buttons_and_a_tap_switches(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg("--models", "fast,smart")
    api.private(USER)
    api.say(USER, "/model")
    await until(lambda: any(keyboard(m) for m in api.bot_messages(USER)), "the model list")
    (listing,) = api.bot_messages(USER)
    assert "Current model: fast" in listing["text"]
    choices = dict(keyboard(listing))
    assert set(choices) == {"fast", "smart"}
    tap = api.press(USER, listing["message_id"], choices["smart"])
    await until(lambda: tap in api.answered)
    assert api.answered[tap] == "Model switched to smart."
    await until(lambda: not keyboard(api.messages[(USER, listing["message_id"])]))
    assert api.messages[(USER, listing["message_id"])]["text"] == "Model switched to smart."
    late = api.press(USER, listing["message_id"], choices["fast"])
    await until(lambda: late in api.answered)
    await r.settled()
    assert api.answered[late] == "This button has expired, so the tap changed nothing."
    switched = [f["params"]["modelId"] for f in r.frames() if f.get("method") == "session/set_model"]
    assert switched == ["smart"]
    record = r.store.get_conversation(f"telegram:{USER}")
    assert record is not None and record.model == "smart"


def stop_buttons(api: FakeBotApi, chat: int) -> list[tuple[int, str]]:
    """(message id, callback data) of every Stop button the chat shows now."""
    return [(m["message_id"], data) for m in api.bot_messages(chat) for label, data in keyboard(m) if label == "Stop"]


async def test_stop_under_a_streamed_answer_in_a_group_ends_the_turn_and_goes_away(
        api: FakeBotApi, tg: TgFactory) -> None:
    """Groups have no drafts: the answer is a message edited as it grows, with a Stop button under it
    until it is final. Pressed, the turn ends as /stop ends it; a second tap is expired."""
    r = await tg()
    api.group(GROUP)
    api.say(GROUP, "@relay_bot text working on it\nhang", user=USER)
    await until(lambda: stop_buttons(api, GROUP), "the answer with its Stop button")
    [(message_id, data)] = stop_buttons(api, GROUP)
    assert 0 < len(data.encode()) <= 64
    pressed = api.press(GROUP, message_id, data, user=USER)
    await until(lambda: pressed in api.answered, "the press answered")
    assert api.answered[pressed] == "Stopped."
    await r.settled()
    assert r.methods().count("session/cancel") == 1
    assert stop_buttons(api, GROUP) == []
    (answer,) = api.bot_messages(GROUP)
    assert answer["message_id"] == message_id
    assert answer["text"].startswith("working on it") and "Stopped." in answer["text"]
    again = api.press(GROUP, message_id, data, user=USER)
    await until(lambda: again in api.answered)
    await r.settled()
    assert api.answered[again] == "This button has expired, so the tap changed nothing."
    assert r.methods().count("session/cancel") == 1
    assert [line.split(" (edited")[0] for line in api.transcript(GROUP)] == [
        "you: @relay_bot text working on it\nhang", f"bot: {answer['text']}"]


async def test_a_private_chats_draft_has_telegrams_own_stop_and_no_keyboard(api: FakeBotApi, tg: TgFactory) -> None:
    """In a private chat the answer streams as a draft, whose Stop is Telegram's: no message there ever
    carries a Stop button of the relay's, not even the first of a long answer, complete above the draft."""
    r = await tg()
    api.private(USER)
    long_line = " ".join(f"word{i}" for i in range(600))  # past Telegram's 4,096 characters
    api.say(USER, f"text {long_line}\nsleep 1.5\ntext  and last")
    await until(lambda: USER in api.drafts and api.bot_messages(USER), "a message above the draft")
    await until(lambda: any("and last" in m["text"] for m in api.bot_messages(USER)), "the answer")
    await r.settled()
    assert len(api.bot_messages(USER)) == 2
    sent = [c.params for c in api.calls() if c.method in ("sendMessage", "editMessageText")]
    assert sent and not any("Stop" in str(params.get("reply_markup", "")) for params in sent)
