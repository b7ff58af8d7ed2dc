"""No reply is lost to Telegram: long replies split at 4096 UTF-16 units without breaking a code
block, 429s honoured, markup Telegram rejects resent as clean text, a chat that removed the bot
given up once, and the refusal card shown once."""

from __future__ import annotations

import json

from tests.fakes.telegram_api import FakeBotApi, utf16_len
from tests.telegram.conftest import GROUP, USER, TgFactory, until


def chunk(text: str) -> str:
    """A script line streaming ``text`` (newlines and all) as one agent_message_chunk."""
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return f"update {json.dumps(update)}"


def footed(api: FakeBotApi, chat: int) -> bool:
    return any("⏱" in m["text"] for m in api.bot_messages(chat))


async def test_a_5000_character_reply_splits_and_the_code_block_is_reopened(api: FakeBotApi, tg: TgFactory) -> None:
    code = "\n".join(f"    value_{i:03d} = compute({i})  # step" for i in range(140))
    answer = "Here is the change.\n\n```python\n" + code + "\n```\n\nThat is all."
    assert len(answer) > 5000
    r = await tg()
    api.private(USER)
    api.say(USER, chunk(answer))
    await until(lambda: footed(api, USER), "the whole answer")
    await r.settled()
    messages = api.bot_messages(USER)
    assert len(messages) >= 2
    assert all(utf16_len(m["text"]) <= 4096 for m in messages)
    first, *rest, last = messages
    assert first["entities"][-1]["type"] == "pre" and first["entities"][-1]["language"] == "python"
    pre_end = first["entities"][-1]["offset"] + first["entities"][-1]["length"]
    assert pre_end == utf16_len(first["text"].rstrip()), "the first message ends inside the closed block"
    reopened = (rest or [last])[0]["entities"][0]
    assert (reopened["type"], reopened["offset"], reopened.get("language")) == ("pre", 0, "python")
    shown = "\n".join(m["text"] for m in messages)
    for i in range(140):
        assert shown.count(f"value_{i:03d} = compute({i})") == 1
    assert "```" not in shown
    assert last["text"].split("\n\n⏱")[0].endswith("That is all.")


async def test_a_reply_made_long_by_rendering_is_still_delivered(api: FakeBotApi, tg: TgFactory) -> None:
    wide = "x" * 60
    rows = "\n".join(f"| {i} | y |" for i in range(90))
    table = f"| n | {wide} |\n|---|---|\n{rows}"
    escapes = "Reserved everywhere: " + "_*[]()~`>#+-=|{}.! " * 40
    assert len(table) < 4096
    r = await tg()
    api.private(USER)
    api.say(USER, chunk(table + "\n\n" + escapes))
    await until(lambda: footed(api, USER), "the whole answer")
    await r.settled()
    messages = api.bot_messages(USER)
    assert sum(utf16_len(m["text"]) for m in messages) > 4096, "the table is wider rendered than written"
    assert all(utf16_len(m["text"]) <= 4096 for m in messages)
    shown = "\n".join(m["text"] for m in messages)
    for i in range(90):
        assert f"\n{i}" in shown or shown.startswith(f"{i}") or f" {i} " in shown
    assert "\\" not in shown, "no escape is ever shown"
    assert "_*[]()~" in shown


#: Far from any pace or back-off the relay uses, so a wait this long can only be the 429's.
RETRY_AFTER = 37


def held(sleeps: list[float]) -> bool:
    """The engine asked to wait out ``retry_after`` (its sleeps are recorded, not slept)."""
    return any(RETRY_AFTER - 1 <= s <= RETRY_AFTER + 3 for s in sleeps)


async def test_a_429_on_edits_holds_the_chat_and_the_final_state_arrives(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.group(GROUP)
    api.fail_next("editMessageText", 429, f"Too Many Requests: retry after {RETRY_AFTER}", retry_after=RETRY_AFTER)
    api.say(GROUP, "@relay_bot text first part\nsleep 0.2\ntext  second part\nsleep 0.2\ntext  third part", user=USER)
    await until(lambda: footed(api, GROUP), "the final answer")
    await r.settled()
    assert api.calls("editMessageText")[0].status == 429
    (answer,) = api.bot_messages(GROUP)
    assert answer["text"].startswith("first part second part third part")
    assert held(r.sleeps), f"retry_after was honoured: {r.sleeps}"


async def test_a_429_on_the_final_send_is_resent_once(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.fail_next("sendMessage", 429, f"Too Many Requests: retry after {RETRY_AFTER}", retry_after=RETRY_AFTER)
    api.say(USER, "text the answer")
    await until(lambda: footed(api, USER), "the final answer")
    await r.settled()
    assert [c.status for c in api.calls("sendMessage")] == [429, 200]
    assert held(r.sleeps), f"retry_after was honoured: {r.sleeps}"
    assert [m["text"].split("\n\n")[0] for m in api.bot_messages(USER)] == ["the answer"]
    assert not r.store.pending_outbound()


async def test_cant_parse_entities_resends_clean_plain_text(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.fail_next("sendMessage", 400, "Bad Request: can't parse entities: can't find end of the entity starting "
                                      "at byte offset 6")
    api.say(USER, chunk("Use **bold** and `x.y()` here! [docs](https://example.com/a_b)"))
    await until(lambda: footed(api, USER), "the answer")
    await r.settled()
    (answer,) = api.bot_messages(USER)
    assert "entities" not in answer, "sent as plain text"
    assert answer["text"].startswith("Use bold and x.y() here! docs (https://example.com/a_b)")
    assert "\\" not in answer["text"] and "**" not in answer["text"] and "`" not in answer["text"]


async def test_a_chat_that_removed_the_bot_is_given_up_once(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.group(GROUP)
    api.remove_bot(GROUP)
    api.say(GROUP, "@relay_bot text nobody will see this", user=USER)
    await until(lambda: "session/prompt" in r.methods())
    await r.settled()
    await until(lambda: not r.engine.outbox.redelivering)
    sends = api.calls("sendMessage")
    assert sends and all(c.status == 403 for c in sends)
    assert len(sends) <= 3, "a refusal for good is not retried"
    assert not r.store.pending_outbound(), "nothing is kept for a chat that will never take it"


async def test_the_refusal_card_is_shown_once(api: FakeBotApi, tg: TgFactory) -> None:
    meta = {"stopReason": "CONTENT_FILTERED", "refusal": {
        "category": "harmful_content", "recommendedModel": "claude-sonnet-4",
        "explanation": "The selected model cannot continue this conversation."}}
    r = await tg("--kiro")
    api.private(USER)
    api.say(USER, f"kiro_meta {json.dumps(meta)}\ntext The selected model cannot continue this conversation.")
    await until(lambda: footed(api, USER), "the answer")
    await r.settled()
    shown = "\n".join(m["text"] for m in api.bot_messages(USER))
    assert shown.count("The model declined to answer this request.") == 1
    assert "Category: harmful_content" in shown and "Suggested model: claude-sonnet-4" in shown
    assert shown.count("The selected model cannot continue this conversation.") == 1
