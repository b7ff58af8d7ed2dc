"""Whole streamed turns through the real discord.py client: in a DM, and in a thread a mention opens."""

from __future__ import annotations

import asyncio
import logging

import pytest

from core.engine import edit_wording
from core.surface_api import MAX_FILE_BYTES
from tests.discord.harness import ALICE, MALLORY, Relay, RelayFactory, until
from tests.fakes.discord_api import BOT_ID, user
from tests.fakes.discord_payloads import now

OTHER_BOT = 111_000_000_000_000_777


async def test_a_dm_is_one_conversation_streamed_by_send_and_edit(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE, "alice")
    first = await r.fake.say(dm, ALICE, "text hello\nsleep 0.3\ntext  world")
    await until(lambda: any("world" in t for t in r.bot_texts(dm)), "the answer")
    await r.settled()
    answer = r.fake.bot_messages(dm)
    assert len(answer) == 1
    assert answer[0]["content"].startswith("hello world")
    assert "⏱" in answer[0]["content"]  # the footer: the turn is over
    assert answer[0]["message_reference"]["message_id"] == str(first)
    assert answer[0].get("_edits", 0) >= 1  # streamed: posted, then edited
    assert r.fake.calls_to("POST", f"/channels/{dm}/typing")
    second = await r.fake.say(dm, ALICE, "again")
    await until(lambda: any("echo: again" in t for t in r.bot_texts(dm)), "the second answer")
    assert r.prompts() == ["text hello\nsleep 0.3\ntext  world", "again"]
    assert second > first


async def test_a_mention_opens_a_thread_named_after_the_prompt_and_the_thread_continues_without_one(
        relay: RelayFactory) -> None:
    r = await relay()
    asked = await r.fake.say(r.channel, ALICE, "explain   the build\nplease", mention=True)
    await until(lambda: r.fake.thread_for(asked) is not None, "a thread")
    thread = r.fake.thread_for(asked)
    assert thread is not None and thread.name == "explain the build"
    await until(lambda: any("echo: explain" in t for t in r.bot_texts(thread.id)), "the answer in the thread")
    await r.settled()
    assert r.bot_texts(r.channel) == []  # nothing but the thread in the channel itself
    assert r.prompts() == ["explain   the build\nplease"]  # the mention itself is not sent
    answer = r.fake.bot_messages(thread.id)[0]
    assert "message_reference" not in answer  # the starter lives in the channel, not in the thread
    await r.fake.say(thread.id, ALICE, "and the tests?")
    await until(lambda: any("echo: and the tests?" in t for t in r.bot_texts(thread.id)), "the follow-up")
    assert len(r.engine.conversations) == 1  # one conversation, the thread's


async def test_a_channel_that_is_not_allowed_gets_nothing(relay: RelayFactory) -> None:
    r = await relay()
    await r.fake.say(r.other_channel, ALICE, "hello?", mention=True)
    await r.fake.say(r.channel, ALICE, "a plain message without a mention")
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "ping")  # a later message that is answered: the earlier ones were seen
    await until(lambda: any("echo: ping" in t for t in r.bot_texts(dm)), "the DM answer")
    await r.settled()
    assert r.bot_texts(r.other_channel) == [] and r.bot_texts(r.channel) == []
    assert not [c for c in r.fake.channels.values() if c.type == 11]  # no thread opened
    assert r.prompts() == ["ping"]


async def test_what_bots_write_is_never_read_not_even_the_relays_own_answers(relay: RelayFactory) -> None:
    """A bot's message (another bot's mention, the relay's own answers coming back on the gateway) is
    skipped before discord.py reads it: nothing answers it and discord.py hands it to no one; nor does
    discord.py keep a cache of messages (the relay reads none from it)."""
    r = await relay()
    client = r.launched.client
    bots_read = asyncio.ensure_future(client.wait_for("message", check=lambda m: m.author.bot))
    r.fake.users[OTHER_BOT] = user(OTHER_BOT, "other-bot", bot=True)
    await r.fake.say(r.channel, OTHER_BOT, "hello relay", mention=True)
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "ping")
    await until(lambda: any("echo: ping" in t for t in r.bot_texts(dm)), "the DM answer")
    await r.settled()
    # The gateway is in order: once discord.py has read this one, it has read the answer's echo too.
    later = asyncio.ensure_future(client.wait_for("message", check=lambda m: m.content == "pong"))
    await r.fake.say(dm, ALICE, "pong")
    await asyncio.wait_for(later, 10)
    assert not bots_read.done()
    bots_read.cancel()
    assert r.bot_texts(r.channel) == [] and r.prompts()[0] == "ping"
    assert not [c for c in r.fake.channels.values() if c.type == 11]  # no thread opened for the bot
    assert list(client.cached_messages) == []


async def test_a_person_not_allowed_is_refused_once_with_their_id_and_never_gets_a_thread(
        relay: RelayFactory) -> None:
    r = await relay()
    first = await r.fake.say(r.channel, MALLORY, "let me in", mention=True)
    await until(lambda: r.bot_texts(r.channel), "the refusal")
    await r.fake.say(r.channel, MALLORY, "please", mention=True)
    dm = r.fake.dm(MALLORY)
    await r.fake.say(dm, MALLORY, "and here?")
    await r.fake.say(r.fake.dm(ALICE), ALICE, "sync")  # once this is answered, the others were handled
    await until(lambda: any("echo: sync" in t for t in r.bot_texts(r.fake.dm(ALICE))), "alice's answer")
    refusals = r.bot_texts(r.channel) + r.bot_texts(dm)
    assert refusals == [f"You are not allowed to use this bot. Your user id is {MALLORY}; an operator can add it "
                        "to the allow-list."]
    assert r.fake.bot_messages(r.channel)[0]["message_reference"]["message_id"] == str(first)
    assert not [c for c in r.fake.channels.values() if c.type == 11]
    assert r.prompts() == ["sync"]


async def test_images_reach_an_agent_that_accepts_them(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 64
    await r.fake.say(dm, ALICE, "report_images", attachments=(("shot.png", "image/png", png),
                                                            ("notes.txt", "text/plain", b"not an image")))
    await until(lambda: any("images:1" in t for t in r.bot_texts(dm)), "the agent saw one image")


async def test_messages_of_a_channel_reach_the_agent_in_the_order_they_were_sent(relay: RelayFactory) -> None:
    r = await relay()
    r.fake.cdn_delay_s = 0.3  # the first message's image takes a while to download
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "first, with a picture", attachments=(("a.png", "image/png", b"png"),))
    await r.fake.say(dm, ALICE, "second")
    await until(lambda: len(r.prompts()) == 2 and r.idle(), "both answered")
    assert r.prompts() == ["first, with a picture", "second"]


async def test_a_text_file_reaches_the_agent_and_a_file_it_cannot_read_is_named_as_not_sent(
        relay: RelayFactory) -> None:
    """What a person attaches besides images: a text file goes into the prompt as text, under its name;
    a file that is not text, or too large to send (not even downloaded), is named above the answer."""
    r = await relay()
    dm = r.fake.dm(ALICE)
    huge = b"x" * (MAX_FILE_BYTES + 1)
    await r.fake.say(dm, ALICE, "why does it fail", attachments=(
        ("app.log", "text/plain; charset=utf-8", b"Traceback: KeyError 'x'\n"),
        ("core.bin", "application/octet-stream", b"\x7fELF\x00\x01"),
        ("huge.log", "text/plain", huge), ("voice-message.ogg", "audio/ogg", b"OggS\x00")))
    await until(lambda: r.prompts() and r.idle(), "answered")
    assert r.prompts() == ["why does it fail\nAttached file: app.log\n```\nTraceback: KeyError 'x'\n```"]
    (answer,) = r.bot_texts(dm)  # (the fake agent echoes the prompt's text)
    notice, echoed = answer.split("\n\n", 1)
    assert notice.startswith('Not sent to the agent: "core.bin", "huge.log", "voice-message.ogg". It gets text files')
    assert echoed.startswith("echo: why does it fail\nAttached file: app.log\n"), answer
    assert r.fake.downloads == 2, "neither the file larger than the relay sends nor the voice message was downloaded"


async def test_a_sticker_alone_is_named_as_not_sent_and_prompts_nothing(relay: RelayFactory) -> None:
    """A sticker carries no text and no file: the person reads that the agent never got it (not silence,
    nor an answer to an empty prompt)."""
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "", extra={"sticker_items": [{"id": "749054660769218631", "name": "Wave",
                                                              "format_type": 1}]})
    await until(lambda: r.bot_texts(dm) and r.idle(), "answered")
    assert [t.split(".")[0] for t in r.bot_texts(dm)] == ['Not sent to the agent: "sticker"']
    assert r.prompts() == []


async def test_a_forwarded_message_reaches_the_agent_said_to_be_forwarded_with_its_file(relay: RelayFactory) -> None:
    """A forward's own content is empty: what it says, and the files it carries, are in its snapshot.
    Before, the agent was prompted with nothing ("The agent finished without writing a reply")."""
    r = await relay()
    dm = r.fake.dm(ALICE)
    key = f"{r.fake.snowflake()}-ci.log"
    r.fake.attachments[key] = b"FAILED test_login\n"
    cdn = f"http://127.0.0.1:{r.fake.port}/cdn/{key}"
    snapshot = {"type": 0, "content": "the build fails on CI, see the log", "embeds": [], "timestamp": now(),
                "edited_timestamp": None, "flags": 0, "mentions": [], "mention_roles": [],
                "attachments": [{"id": key.split("-")[0], "filename": "ci.log", "size": 18,
                                 "content_type": "text/plain", "url": cdn, "proxy_url": cdn}]}
    await r.fake.say(dm, ALICE, "", extra={
        "message_reference": {"type": 1, "message_id": "123456789012345678", "channel_id": "223456789012345678"},
        "message_snapshots": [{"message": snapshot}]})
    await until(lambda: r.prompts() and r.idle(), "answered")
    assert r.prompts() == ["Forwarded message:\nthe build fails on CI, see the log\n"
                           "Attached file: ci.log\n```\nFAILED test_login\n```"]
    assert not any("finished without" in t for t in r.bot_texts(dm))


async def one_running_one_waiting(r: Relay, waiting: str) -> tuple[int, int, int]:
    """In a DM: a message whose answer runs 0.6 s, then ``waiting`` behind it; the DM's id and the two ids."""
    dm = r.fake.dm(ALICE, "alice")
    first = await r.fake.say(dm, ALICE, "text working\nsleep 0.6\ntext done")
    await until(lambda: r.prompts(), "the first message is at the agent")
    second = await r.fake.say(dm, ALICE, waiting)
    await until(lambda: any(t.startswith("Queued") for t in r.bot_texts(dm)), "the second waits its turn")
    return dm, first, second


async def test_an_edit_reaches_a_waiting_message_and_is_answered_as_not_sent_once_read(relay: RelayFactory) -> None:
    """A person fixes a typo (Discord sends MESSAGE_UPDATE with the edit time): in the message waiting for its
    turn the agent reads the fix; under the one it answers, the person reads that the edit was not sent.
    Link previews Discord adds (an update without an edit time) and the bot's own edits change nothing."""
    r = await relay()
    dm, first, second = await one_running_one_waiting(r, "text fix foo.py https://example.com")
    await r.fake.preview(dm, second)
    await r.fake.edit(dm, second, "text fix bar.py")
    await r.fake.edit(dm, first, "text working harder")
    await until(lambda: any("fix bar.py" in t for t in r.bot_texts(dm)), "the edited message answered")
    await r.settled()
    assert r.prompts() == ["text working\nsleep 0.6\ntext done", "text fix bar.py"]
    said = edit_wording.edit_not_sent_text("text working harder")
    [notice] = [m for m in r.fake.bot_messages(dm) if m["content"] == said]
    assert notice["message_reference"]["message_id"] == str(first)


async def test_an_edit_of_a_mention_is_answered_in_the_thread_it_opened(relay: RelayFactory) -> None:
    r = await relay()
    asked = await r.fake.say(r.channel, ALICE, "text explain the build", mention=True)
    chatter = await r.fake.say(r.channel, ALICE, "lunch at noon?")
    await until(lambda: r.fake.thread_for(asked) is not None, "a thread")
    thread = r.fake.thread_for(asked)
    assert thread is not None
    await until(lambda: any("explain the build" in t for t in r.bot_texts(thread.id)), "the answer in the thread")
    await r.fake.edit(r.channel, chatter, "lunch at one?")
    await r.fake.edit(r.channel, asked, f"<@{BOT_ID}> text explain the tests")
    said = edit_wording.edit_not_sent_text("text explain the tests")
    await until(lambda: said in r.bot_texts(thread.id), "the edit answered in the thread")
    await r.settled()
    assert r.bot_texts(r.channel) == [], "nothing in the channel itself"
    assert r.bot_texts(thread.id).count(said) == 1
    assert r.prompts() == ["text explain the build"]


async def test_a_message_deleted_while_it_waits_is_not_answered_and_one_read_already_is_said_to_stay(
        relay: RelayFactory) -> None:
    """Discord says only which message was deleted (MESSAGE_DELETE: its id and channel): the relay knows the
    rest from its journal. The relay deleting messages of its own is no such deletion."""
    r = await relay()
    dm, first, second = await one_running_one_waiting(r, "text my token is hunter2")
    await r.fake.delete(dm, second)
    await until(lambda: any(t.startswith("🗑 Deleted") for t in r.bot_texts(dm)), "the receipt says so")
    await r.fake.delete(dm, first)
    await until(lambda: edit_wording.DELETED_AFTER_READ in r.bot_texts(dm), "the first's deletion answered")
    await r.settled()
    assert r.prompts() == ["text working\nsleep 0.6\ntext done"]
    assert r.bot_texts(dm).count(edit_wording.DELETED_AFTER_READ) == 1


async def test_a_channel_message_whose_forgotten_mention_is_edited_in_opens_its_thread(relay: RelayFactory) -> None:
    r = await relay()
    forgot = await r.fake.say(r.channel, ALICE, "text why is the build red?")
    await r.fake.edit(r.channel, forgot, f"<@{BOT_ID}> text why is the build red?")
    await until(lambda: r.fake.thread_for(forgot) is not None, "a thread under the message")
    thread = r.fake.thread_for(forgot)
    assert thread is not None
    await until(lambda: any("why is the build red?" in t for t in r.bot_texts(thread.id)), "the answer")
    await r.fake.edit(r.channel, forgot, f"<@{BOT_ID}> text why is the build still red?")
    said = edit_wording.edit_not_sent_text("text why is the build still red?")
    await until(lambda: said in r.bot_texts(thread.id), "a later edit is an edit")
    await r.settled()
    assert r.prompts() == ["text why is the build red?"]


async def test_a_mention_edited_into_someone_elses_thread_makes_the_thread_the_bots(relay: RelayFactory) -> None:
    r = await relay()
    thread = await r.fake.thread(r.channel, "people talking", owner=ALICE)
    said = await r.fake.say(thread, ALICE, "text is the deploy done?")
    await r.fake.edit(thread, said, f"<@{BOT_ID}> text is the deploy done?")
    await until(lambda: any("is the deploy done?" in t for t in r.bot_texts(thread)), "the answer in the thread")
    await r.fake.say(thread, ALICE, "text and the tests?")  # the thread is the bot's now: no mention needed
    await until(lambda: any("and the tests?" in t for t in r.bot_texts(thread)), "the follow-up")
    await r.settled()
    assert r.prompts() == ["text is the deploy done?", "text and the tests?"]


async def test_a_deletion_where_the_relay_serves_nobody_is_not_looked_up(relay: RelayFactory,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    """Discord reports every deletion the bot can see: one in a channel the relay does not serve is passed
    over without a look at the journal; one where it serves is looked up (and found not the bot's)."""
    r = await relay()
    caplog.set_level(logging.DEBUG, logger="acp_relay.engine.edits")
    elsewhere = await r.fake.say(r.other_channel, ALICE, "not for the bot")
    here = await r.fake.say(r.channel, ALICE, "not for the bot either")
    await r.fake.delete(r.other_channel, elsewhere)
    await r.fake.delete(r.channel, here)
    looked = lambda: [m for m in caplog.messages if "never took in" in m]  # noqa: E731
    await until(lambda: looked(), "the deletion where the relay serves is looked up")
    await r.settled()
    assert len(looked()) == 1 and str(here) in looked()[0]
