"""The Telegram surface's translations on their own: Markdown out, keys, errors and updates in."""

from __future__ import annotations

from typing import Any

import pytest
from telegram import Bot, Update, User
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, RetryAfter, TimedOut

from core.engine.pacing import Pacer
from core.engine.splitter import split_rendered
from core.engine.surface import (
    DeliveryFailed,
    DeliveryRefused,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    RateLimited,
    measure,
)
from surfaces.telegram import keys
from surfaces.telegram.albums import album_of, chat_of
from surfaces.telegram.errors import delivery_errors
from surfaces.telegram.inbound import message_in, press_in
from surfaces.telegram.render import literal_html, render
from tests.fakes.telegram_api import BOT_ID, TOKEN

ME = User(BOT_ID, "Relay", True, username="relay_bot")


def test_entities_carry_the_formatting_and_count_utf16_units() -> None:
    text, entities = render("😀 **bold** and `code`")
    assert text == "😀 bold and code"
    bold, code = entities
    assert (bold.type, bold.offset, bold.length) == ("bold", 3, 4)  # the emoji is two UTF-16 units
    assert (code.type, code.offset, code.length) == ("code", 12, 4)


def test_reserved_characters_arrive_as_written_with_no_escapes() -> None:
    text, _ = render("Done! Costs 1.5 (approx) - see a_b + c=d {x} #1 >")
    assert text == "Done! Costs 1.5 (approx) - see a_b + c=d {x} #1 >"


def test_html_in_the_agents_text_is_kept_as_text_but_code_is_left_alone() -> None:
    assert render("returns Vec<String> and <div>x</div>")[0] == "returns Vec<String> and <div>x</div>"
    assert render("<details>\n<summary>hi</summary>\n</details>")[0] == "<details>\n<summary>hi</summary>\n</details>"
    assert literal_html("`<i>` and\n\n```html\n<b>\n```") == "`<i>` and\n\n```html\n<b>\n```"
    assert render("```html\n<b>x</b>\n```")[0] == "<b>x</b>"


def test_headings_are_bold_without_an_emoji_and_bullets_are_dots() -> None:
    text, entities = render("## Plan\n\n- one\n- two")
    assert text.rstrip() == "Plan\n\n• one\n• two"
    assert {e.type for e in entities} == {"bold", "underline"}


def test_a_code_block_keeps_its_language() -> None:
    _, entities = render("```python\nx = 1\n```")
    assert [(e.type, e.language) for e in entities] == [("pre", "python")]


def test_split_pieces_fit_as_telegram_counts_them() -> None:
    markdown = "intro\n\n```py\n" + "\n".join(f"line_{i} = '😀'" for i in range(600)) + "\n```\nend"
    pieces = split_rendered(markdown, lambda m: render(m)[0], 4096, "utf16")
    assert len(pieces) >= 2
    assert all(measure(render(p)[0], "utf16") <= 4096 for p in pieces)
    assert all(render(p)[1][-1].type == "pre" for p in pieces[:-1])  # each piece's fence is closed


def test_conversation_keys_and_the_pace_a_topic_shares_with_its_group() -> None:
    assert keys.conversation_key(42) == "telegram:42"
    assert keys.conversation_key(-100, 7) == "telegram:-100:7"
    assert keys.parse_key("telegram:-100:7") == keys.ChatRef(-100, 7)
    assert keys.rate_key("telegram:-100:7") == keys.rate_key("telegram:-100:9") == "telegram:-100"
    assert keys.rate_key("telegram:42") == "telegram:42"
    with pytest.raises(DeliveryFailed):
        keys.parse_key("slack:T:C:1")


def test_drafts_and_one_message_a_second_in_private_chats_twenty_a_minute_in_groups() -> None:
    private, group = keys.capabilities_for("telegram:42"), keys.capabilities_for("telegram:-100:7")
    assert private.can_stream_natively and not group.can_stream_natively
    assert (private.rate_limit.calls, private.rate_limit.per_s) == (1, 1.0)  # type: ignore[union-attr]
    assert (group.rate_limit.calls, group.rate_limit.per_s) == (20, 60.0)  # type: ignore[union-attr]
    assert private.length_unit == group.length_unit == "utf16" and private.max_message_length == 4096
    assert group.typing_refresh_s == 4.0


def test_two_topics_of_one_group_wait_for_each_other_in_the_core_pacer() -> None:
    pacer = Pacer(clock=lambda: 0.0)
    limit = keys.capabilities_for("telegram:-100:1").rate_limit
    assert limit is not None
    first = [pacer.reserve(keys.rate_key("telegram:-100:1"), limit) for _ in range(limit.burst)]
    second = pacer.reserve(keys.rate_key("telegram:-100:2"), limit)
    other_chat = pacer.reserve(keys.rate_key("telegram:-200:1"), limit)
    assert first == [0.0] * limit.burst, "a short burst after a quiet moment"
    assert (second, other_chat) == (3.0, 0.0), "the other topic waits for the group's pace; another chat does not"


@pytest.mark.parametrize(("error", "expected"), [
    (RetryAfter(7), RateLimited),
    (BadRequest("Can't parse entities: character '.' is reserved"), MarkupRejected),
    (BadRequest("Message is too long"), MessageTooLong),
    (BadRequest("Message is not modified: specified new message content"), NotModified),
    (BadRequest("Chat not found"), DeliveryRefused),
    (BadRequest("Message thread not found"), DeliveryRefused),
    (Forbidden("Forbidden: bot was kicked from the group chat"), DeliveryRefused),
    (Forbidden("Forbidden: bot was blocked by the user"), DeliveryRefused),
    (BadRequest("Message to edit not found"), DeliveryFailed),
    (TimedOut(), DeliveryFailed),
    (NetworkError("connection reset"), DeliveryFailed),
    (InvalidToken(f"The token `{TOKEN}` was rejected by the server."), DeliveryFailed),
])
def test_ptb_errors_become_the_core_delivery_errors(error: Exception, expected: type[Exception]) -> None:
    with pytest.raises(expected) as caught, delivery_errors("sendMessage"):
        raise error
    assert caught.value.__cause__ is error
    assert TOKEN not in str(caught.value)
    if isinstance(caught.value, RateLimited):
        assert caught.value.retry_after_s == 7.0


def _update(message: dict[str, Any]) -> Update:
    base = {"message_id": 5, "date": 0, "from": {"id": 9, "is_bot": False, "first_name": "Ada"}}
    update = Update.de_json({"update_id": 1, "message": {**base, **message}}, Bot(TOKEN))
    assert update is not None
    return update


GROUP_CHAT = {"id": -100, "type": "supergroup", "title": "T", "is_forum": True}


def test_a_private_message_is_one_conversation_and_keeps_its_text() -> None:
    got = message_in(_update({"chat": {"id": 9, "type": "private"}, "text": "hello @relay_bot"}), ME)
    assert got is not None
    msg = got.message
    assert (msg.conversation_key, msg.user_id, msg.text, msg.message_id) == ("telegram:9", "9", "hello @relay_bot",
                                                                             "9:5")


def test_in_a_group_only_a_mention_a_reply_to_the_bot_or_its_command_is_heard() -> None:
    def heard(**message: Any) -> str | None:
        got = message_in(_update({"chat": GROUP_CHAT, **message}), ME)
        return None if got is None else got.message.text

    mention = [{"type": "mention", "offset": 0, "length": 10}]
    command = [{"type": "bot_command", "offset": 0, "length": 4}]
    assert heard(text="just chatting") is None
    assert heard(text="@relay_bot fix it", entities=mention) == "fix it"
    assert heard(text="@other_bot fix it", entities=mention) is None
    assert heard(text="/new", entities=command) == "/new"
    assert heard(text="/foo", entities=command) is None  # not ours and not addressed to us
    at_us = [{"type": "bot_command", "offset": 0, "length": 15}]
    assert heard(text="/stop@relay_bot", entities=at_us) == "/stop@relay_bot"
    assert heard(text="/stop@OtherBot", entities=[{"type": "bot_command", "offset": 0, "length": 14}]) is None
    bot_said = {"message_id": 3, "date": 0, "chat": GROUP_CHAT, "from": ME.to_dict(), "text": "earlier answer"}
    assert heard(text="and this?", reply_to_message=bot_said) == "and this?"


def test_a_topic_message_is_its_own_conversation_and_its_opener_is_not_a_reply_to_the_bot() -> None:
    opener = {"message_id": 7, "date": 0, "chat": GROUP_CHAT, "from": ME.to_dict(),
              "forum_topic_created": {"name": "x", "icon_color": 1}}
    plain = {"chat": GROUP_CHAT, "text": "hi", "message_thread_id": 7, "is_topic_message": True,
             "reply_to_message": opener}
    assert message_in(_update(plain), ME) is None
    mention = {**plain, "text": "@relay_bot hi", "entities": [{"type": "mention", "offset": 0, "length": 10}]}
    got = message_in(_update(mention), ME)
    assert got is not None and got.message.conversation_key == "telegram:-100:7"


def test_bots_and_service_messages_are_not_heard() -> None:
    bot_user = {"id": 11, "is_bot": True, "first_name": "Other"}
    assert message_in(_update({"chat": {"id": 9, "type": "private"}, "text": "x", "from": bot_user}), ME) is None
    assert message_in(_update({"chat": {"id": 9, "type": "private"}, "new_chat_title": "y"}), ME) is None


def test_a_button_press_names_its_conversation_topic_and_token() -> None:
    update = Update.de_json({"update_id": 2, "callback_query": {
        "id": "q1", "from": {"id": 9, "is_bot": False, "first_name": "Ada"}, "chat_instance": "c", "data": "tok",
        "message": {"message_id": 12, "date": 0, "chat": GROUP_CHAT, "from": ME.to_dict(), "text": "Allow?",
                    "message_thread_id": 7, "is_topic_message": True}}}, Bot(TOKEN))
    assert update is not None and update.callback_query is not None
    press = press_in(update.callback_query)
    assert press is not None
    assert (press.conversation_key, press.user_id, press.token, press.message_id) == (
        "telegram:-100:7", "9", "tok", "12")


def test_an_edit_is_its_new_words_under_an_id_of_its_own_and_a_moving_live_location_is_nothing() -> None:
    def edited(update_id: int, **message: Any) -> Update:
        base = {"message_id": 5, "date": 0, "edit_date": 60, "from": {"id": 9, "is_bot": False, "first_name": "Ada"},
                "chat": {"id": 9, "type": "private"}}
        update = Update.de_json({"update_id": update_id, "edited_message": {**base, **message}}, Bot(TOKEN))
        assert update is not None
        return update

    got = message_in(edited(40, text="fix bar.py"), ME)
    assert got is not None and not got.attached
    assert (got.message.text, got.message.message_id, got.message.edits) == ("fix bar.py", "9:5:edit:40", "9:5")
    photo = [{"file_id": "p", "file_unique_id": "u", "width": 9, "height": 9}]
    captioned = message_in(edited(41, photo=photo, caption="this one"), ME)
    assert captioned is not None and captioned.message.text == "this one"
    assert [a.file_id for a in captioned.attached] == ["p"], \
        "a caption's edit comes with its photo: the core reads it only if the edit makes the message the bot's"
    assert message_in(edited(42, location={"latitude": 1.0, "longitude": 2.0}), ME) is None


def test_an_album_is_known_by_its_chat_and_a_media_group_id_that_can_be_part_of_a_store_key() -> None:
    def part(group: object, chat: object = -100778) -> dict[str, Any]:
        return {"update_id": 5, "message": {"message_id": 9, "chat": {"id": chat}, "media_group_id": group}}

    assert album_of(part("13579")) == ("-100778", "13579")
    assert album_of(part("1:2")) is None, "taken alone: a colon would split its key differently"
    assert album_of(part("")) is None and album_of(part(13579)) is None and album_of(part("x" * 65)) is None
    assert album_of(part("13579", chat="-100778")) is None
    assert album_of({"update_id": 5, "edited_message": part("1")["message"]}) is None, "an edit is no album part"
    assert chat_of(part("1")) == "-100778"
    assert chat_of({"update_id": 6, "callback_query": {"id": "q", "message": {"chat": {"id": 42}}}}) == "42"
    assert chat_of({"update_id": 7, "poll": {}}) is None
