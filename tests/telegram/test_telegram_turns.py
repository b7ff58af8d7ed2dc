"""Whole turns through the real PTB Application against the fake Bot API: private chats stream as
drafts, forum topics as a message edited in place, and the commands in Telegram's spelling."""

from __future__ import annotations

from core.engine import edit_wording
from tests.fakes.telegram_api import FakeBotApi
from tests.telegram.conftest import GROUP, USER, TgFactory, until

STREAMED = "text hello **world**\nsleep 0.3\ntext  and more"


def finals(api: FakeBotApi, chat: int, topic: int | None = None) -> list[str]:
    """The bot's answers that ended a turn (they carry the footer)."""
    return [m["text"] for m in api.bot_messages(chat, topic) if "⏱" in m["text"]]


async def test_a_private_chat_streams_a_draft_then_sends_the_final_answer(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    asked = api.say(USER, STREAMED)
    await until(lambda: finals(api, USER), "the final answer")
    await r.settled()
    drafts = api.calls("sendMessageDraft")
    assert drafts, "the answer streamed as a draft"
    assert {d.params["draft_id"] for d in drafts} == {drafts[0].params["draft_id"]} != {0}
    assert drafts[0].params["text"] == "hello world"
    assert drafts[0].params["entities"] == [{"type": "bold", "offset": 6, "length": 5}]
    (final,) = api.bot_messages(USER)
    assert final["text"].startswith("hello world and more\n\n⏱")
    assert final["entities"] == [{"type": "bold", "offset": 6, "length": 5}]
    assert final["reply_to_message"]["message_id"] == asked["message_id"]
    order = [c.method for c in api.events if c.method in ("sendMessageDraft", "sendMessage")]
    assert order[-1] == "sendMessage" and order[0] == "sendMessageDraft"
    assert not api.calls("editMessageText"), "a private chat is never edited into shape"
    typing = [i for i, c in enumerate(api.events) if c.method == "sendChatAction"]
    sent = next(i for i, c in enumerate(api.events) if c.method == "sendMessage")
    assert len(typing) >= 2, "typing is refreshed while the agent works"
    assert max(typing) < sent, "no typing after the answer"
    assert api.transcript(USER) == [f"you: {STREAMED}", f"bot: {final['text']}"]


async def test_a_forum_topic_is_its_own_conversation_answered_in_that_topic(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.group(GROUP, forum=True)
    first, second = api.topic(GROUP, "Feature"), api.topic(GROUP, "Bug")
    api.say(GROUP, f"@relay_bot {STREAMED}", user=USER, topic=first)
    await until(lambda: finals(api, GROUP, first), "the answer in the first topic")
    api.say(GROUP, "@relay_bot text in the other topic", user=USER, topic=second)
    await until(lambda: finals(api, GROUP, second), "the answer in the second topic")
    await r.settled()
    assert not api.calls("sendMessageDraft"), "no drafts outside private chats"
    (answer,) = api.bot_messages(GROUP, first)
    assert answer["text"].startswith("hello world and more")
    assert answer["message_thread_id"] == first and answer["is_topic_message"]
    assert answer.get("_edits", 0) >= 1, "the group's answer grew by edits"
    assert finals(api, GROUP, second)[0].startswith("in the other topic")
    sessions = {r.store.get_conversation(f"telegram:{GROUP}:{t}").session_id for t in (first, second)}  # type: ignore[union-attr]
    assert len(sessions) == 2 and None not in sessions
    assert all(c.params.get("message_thread_id") in (first, second) for c in api.calls("sendMessage"))


async def test_in_a_group_the_bot_answers_mentions_and_replies_only(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.group(GROUP)
    api.say(GROUP, "text people talking among themselves", user=USER)
    api.say(GROUP, "@relay_bot text first", user=USER)
    await until(lambda: finals(api, GROUP), "the mention is answered")
    await r.settled()
    (answer,) = api.bot_messages(GROUP)
    api.say(GROUP, "text a reply to the bot", user=USER, reply_to=answer["message_id"])
    await until(lambda: len(finals(api, GROUP)) == 2, "the reply is answered")
    await r.settled()
    assert r.prompts() == ["text first", "text a reply to the bot"]


async def test_new_starts_a_new_session(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.say(USER, "text one")
    await until(lambda: finals(api, USER))
    before = r.store.get_conversation(f"telegram:{USER}")
    api.say(USER, "/new")
    await until(lambda: any("new conversation" in t for t in r.texts(USER)), "the reset is confirmed")
    api.say(USER, "text two")
    await until(lambda: len(finals(api, USER)) == 2)
    await r.settled()
    after = r.store.get_conversation(f"telegram:{USER}")
    assert before is not None and after is not None
    assert after.session_id != before.session_id and after.generation == before.generation + 1
    assert r.methods().count("session/new") == 2


async def test_compact_reaches_the_agent_as_compact_in_every_spelling(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg("--on-compact", "text compacted it")
    api.private(USER)
    api.group(GROUP)
    api.say(USER, "/compact")
    await until(lambda: finals(api, USER))
    api.say(GROUP, "/compact@relay_bot", user=USER)
    await until(lambda: finals(api, GROUP))
    await r.settled()
    assert r.prompts() == ["/compact", "/compact"]


async def test_stop_sends_session_cancel_and_the_answer_says_stopped(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.group(GROUP)
    api.say(GROUP, "@relay_bot text working on it\nhang", user=USER)
    await until(lambda: "session/prompt" in r.methods() and api.calls("sendChatAction"))
    api.say(GROUP, "/stop@OtherBot", user=USER)  # another bot's: ignored
    api.say(GROUP, "/stop@relay_bot", user=USER)
    await until(lambda: "session/cancel" in r.methods(), "the cancel reached the agent")
    await until(lambda: any("Stopped." in t for t in r.texts(GROUP)), "the answer says it stopped")
    await r.settled()
    assert r.methods().count("session/cancel") == 1
    assert not any("Nothing is running" in t for t in r.texts(GROUP))


async def test_the_drafts_stop_button_ends_the_turn_and_the_words_so_far_stay(api: FakeBotApi, tg: TgFactory) -> None:
    """Bot API 10.3: a draft shows Telegram's own Stop button; pressed, the turn ends as /stop ends it,
    and the words shown so far are the final message (they stay on screen meanwhile)."""
    r = await tg()
    api.private(USER)
    asked = api.say(USER, "text working on it\nhang")
    await until(lambda: USER in api.drafts, "the draft")
    draft = api.drafts[USER]
    assert draft["can_stop"] is True and draft["keep_on_stop"] is True
    api.stop_draft(USER)
    await until(lambda: "session/cancel" in r.methods(), "the cancel reached the agent")
    await until(lambda: finals(api, USER), "the answer, ended")
    await r.settled()
    assert r.methods().count("session/cancel") == 1
    (final,) = api.bot_messages(USER)
    assert final["text"].startswith("working on it") and "Stopped." in final["text"]
    assert final["reply_to_message"]["message_id"] == asked["message_id"]
    assert USER not in api.drafts, "the final message replaced the draft"
    assert api.transcript(USER) == ["you: text working on it\nhang", f"bot: {final['text']}"]


async def test_a_stop_pressed_on_a_draft_that_ended_changes_nothing(api: FakeBotApi, tg: TgFactory) -> None:
    """A Stop that reaches the relay after its answer ended (the person pressed it as the answer came) does
    not stop the next turn, nor say that nothing runs."""
    r = await tg()
    api.private(USER)
    api.say(USER, "text first answer\nsleep 0.5\ntext  is done")
    await until(lambda: USER in api.drafts, "the first draft")
    draft = dict(api.drafts[USER])
    await until(lambda: finals(api, USER), "the first answer")
    api.say(USER, "text second answer\nsleep 0.5\ntext  is whole")
    await until(lambda: "session/prompt" in r.methods()[r.methods().index("session/prompt") + 1:], "the second turn")
    api.drafts[USER] = draft  # Telegram took the first draft's Stop just before its answer replaced it
    api.stop_draft(USER)
    await until(lambda: len(finals(api, USER)) == 2, "the second answer")
    await r.settled()
    assert "session/cancel" not in r.methods()
    assert finals(api, USER)[1].startswith("second answer is whole")
    assert not any("Stopped." in t or "Nothing is running" in t for t in r.texts(USER))


async def test_help_and_start_list_the_commands_registered_in_the_menu(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    assert [c["command"] for c in api.commands] == ["new", "compact", "stop", "steer", "status", "model",
                                                    "sessions", "project", "agent", "mode", "help"]
    api.private(USER)
    api.say(USER, "/start")
    await until(lambda: r.texts(USER))
    api.say(USER, "/status")
    await until(lambda: len(r.texts(USER)) == 2)
    await r.settled()
    help_text, status = r.texts(USER)
    assert "/new" in help_text and "/compact" in help_text and "/model" in help_text
    assert "/sessions" in help_text and "/project" in help_text and "/agent" in help_text and "/mode" in help_text
    assert "Agent: fake" in status
    assert not r.prompts(), "commands never reach the agent"


async def test_an_image_reaches_an_agent_that_accepts_images(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.photo(USER, b"\xff\xd8\xff fake jpeg", caption="report_images")
    await until(lambda: finals(api, USER))
    await r.settled()
    assert finals(api, USER)[0].startswith("images:1")
    (prompt,) = [f for f in r.frames() if f.get("method") == "session/prompt"]
    image = [b for b in prompt["params"]["prompt"] if b["type"] == "image"]
    assert image and image[0]["mimeType"] == "image/jpeg"


async def test_an_agent_without_images_gets_the_text_and_the_person_a_sentence(api: FakeBotApi,
                                                                              tg: TgFactory) -> None:
    r = await tg("--no-images")
    api.private(USER)
    api.photo(USER, b"\xff\xd8\xff fake jpeg", caption="report_images")
    await until(lambda: finals(api, USER))
    await r.settled()
    assert "does not accept images" in finals(api, USER)[0]
    assert finals(api, USER)[0].count("images:0") == 1


async def test_a_forwarded_message_reaches_the_agent_said_to_be_forwarded(api: FakeBotApi, tg: TgFactory) -> None:
    """Someone else's words, forwarded to the bot: the agent reads that they are (the person's own comment,
    which Telegram sends as a message of its own, reads as theirs)."""
    r = await tg()
    api.private(USER)
    api.say(USER, "text why does this happen?")
    await until(lambda: finals(api, USER), "the comment is answered")
    api.say(USER, "text KeyError: 'x' in deploy.py", extra={
        "forward_origin": {"type": "user", "date": 1700000000, "sender_user": {"id": 77, "is_bot": False,
                                                                              "first_name": "Bob"}}})
    await until(lambda: len(finals(api, USER)) == 2, "the forward is answered")
    await r.settled()
    assert r.prompts() == ["text why does this happen?", "Forwarded message:\ntext KeyError: 'x' in deploy.py"]


async def test_an_edit_reaches_a_waiting_message_and_is_answered_as_not_sent_once_read(
        api: FakeBotApi, tg: TgFactory) -> None:
    """A person fixes a typo: in the message waiting for its turn, the agent reads the fix; in the one it
    is answering, the person reads under it that the edit was not sent (before, Telegram kept edits
    from the relay: nothing happened, and the agent worked on the words the person had corrected)."""
    r = await tg()
    api.private(USER)
    first = api.say(USER, "text working\nsleep 0.6\ntext done")
    await until(lambda: r.prompts(), "the first message is at the agent")
    second = api.say(USER, "text fix foo.py")
    await until(lambda: any(t.startswith("Queued") for t in r.texts(USER)), "the second waits its turn")
    api.edit(USER, second["message_id"], "text fix bar.py")
    api.edit(USER, first["message_id"], "text working harder")
    await until(lambda: len(finals(api, USER)) == 2, "both answered")
    await r.settled()
    assert r.prompts() == ["text working\nsleep 0.6\ntext done", "text fix bar.py"]
    said = edit_wording.edit_not_sent_text("text working harder")
    [notice] = [m for m in api.bot_messages(USER) if m["text"] == said]
    assert notice["reply_to_message"]["message_id"] == first["message_id"]
    assert finals(api, USER)[1].startswith("fix bar.py")
    transcript = api.transcript(USER)
    assert transcript.count(f"bot: {notice['text']}") == 1
    assert "you: text fix bar.py (edited)" in transcript


async def test_in_a_group_only_an_edit_of_a_message_for_the_bot_is_answered(api: FakeBotApi, tg: TgFactory) -> None:
    """A chatter's edit is not the bot's; an edit that adds the forgotten mention makes the message the bot's:
    it is answered as it reads now."""
    r = await tg()
    api.group(GROUP)
    chatter = api.say(GROUP, "lunch at noon?", user=USER)
    asked = api.say(GROUP, "@relay_bot text hello", user=USER)
    await until(lambda: finals(api, GROUP), "the answer")
    api.edit(GROUP, chatter["message_id"], "lunch at one?")
    api.edit(GROUP, asked["message_id"], "@relay_bot text hello")  # the same words: a no-op edit
    api.edit(GROUP, asked["message_id"], "@relay_bot text hello there")
    said = edit_wording.edit_not_sent_text("text hello there")
    await until(lambda: said in r.texts(GROUP), "the edit is answered")
    await r.settled()
    assert r.prompts() == ["text hello"]
    assert r.texts(GROUP).count(said) == 1, "the chatter's edit and the no-op are not the bot's"
    forgot = api.say(GROUP, "text what broke the build?", user=USER)  # the mention forgotten
    await r.settled()  # seen, and not the bot's
    api.edit(GROUP, forgot["message_id"], "@relay_bot text what broke the build?")
    await until(lambda: len(finals(api, GROUP)) == 2, "the message answered once the mention is in")
    await r.settled()
    assert r.prompts() == ["text hello", "text what broke the build?"]
    [late] = [m for m in api.bot_messages(GROUP) if m["text"].startswith("what broke the build?")]
    assert late["reply_to_message"]["message_id"] == forgot["message_id"], "answered under the message itself"


async def test_a_photo_whose_forgotten_mention_is_edited_into_its_caption_reaches_the_agent_with_the_photo(
        api: FakeBotApi, tg: TgFactory) -> None:
    """The message the edit makes the bot's is read whole, its photo too (before: its words alone); an edit
    of a message the agent read already is words only, its photo not sent or kept again."""
    r = await tg()
    api.group(GROUP)
    photo = api.photo(GROUP, b"\xff\xd8" + b"\0" * 64, caption="report_images", user=USER)  # the mention forgotten
    await r.settled()
    api.edit(GROUP, photo["message_id"], "@relay_bot report_images")
    await until(lambda: finals(api, GROUP), "answered once the mention is in")
    await r.settled()
    assert r.prompts() == ["report_images"]
    [answer] = finals(api, GROUP)
    assert answer.startswith("images:1"), answer
    api.edit(GROUP, photo["message_id"], "@relay_bot report_images again")
    said = edit_wording.edit_not_sent_text("report_images again")
    await until(lambda: said in r.texts(GROUP), "the edit of a message read already is said not sent")
    await r.settled()
    assert r.prompts() == ["report_images"]
    edits = r.store.backend.execute("SELECT payload FROM inbound WHERE message_id LIKE '%:edit:%'").rows
    assert edits and all('"attachments": []' in str(payload) for (payload,) in edits), "its photo not journaled again"
