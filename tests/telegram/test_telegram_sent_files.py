"""Files a person sends the bot (Telegram documents), through the real PTB Application against the
fake Bot API: a text file reaches the agent as text in its prompt, named; a file that is not text,
or is too large to send (it is not even downloaded), is named in the answer as not sent, so the
person never believes the agent read what it never saw. A stranger's file is never downloaded."""

from __future__ import annotations

import asyncio
from typing import Any

from core.engine import edit_wording
from core.surface_api import MAX_FILE_BYTES
from tests.fakes.telegram_api import FakeBotApi
from tests.telegram.conftest import USER, TgFactory, until
from tests.telegram.test_telegram_turns import finals

STRANGER = 666


def _prompt(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (prompt,) = [f for f in frames if f.get("method") == "session/prompt"]
    blocks: list[dict[str, Any]] = prompt["params"]["prompt"]
    return blocks


async def test_a_text_file_reaches_the_agent_as_text_under_its_name(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    log = "ERROR boom at line 3\n```not a fence of ours```\n"
    api.document(USER, log.encode(), "build.log", "text/plain", caption="read it")
    await until(lambda: finals(api, USER), "answered")
    await r.settled()
    caption, attached = _prompt(r.frames())
    assert caption == {"type": "text", "text": "read it"}
    assert attached["type"] == "text"
    header, body = attached["text"].split("\n", 1)
    assert header == "Attached file: build.log"
    assert body == f"````\n{log.rstrip()}\n````", "fenced past the backticks inside it"
    [answer] = finals(api, USER)  # (the fake agent echoes the prompt's text)
    assert answer.startswith("echo: read it\nAttached file: build.log\nERROR boom at line 3"), "no notice above it"


async def test_a_file_alone_is_a_message_too(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.document(USER, b"key: value\n", "config.yaml", "application/x-yaml")
    await until(lambda: finals(api, USER), "answered")
    await r.settled()
    (attached,) = _prompt(r.frames())
    assert attached["text"] == "Attached file: config.yaml\n```\nkey: value\n```"


async def test_a_file_that_is_not_text_or_too_large_is_named_as_not_sent(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.document(USER, b"\x7fELF\x00\x01\x02binary", "report.bin", "application/octet-stream", caption="text first")
    await until(lambda: finals(api, USER), "the first answered")
    api.document(USER, b"a" * (MAX_FILE_BYTES + 1), "huge.log", "text/plain", caption="text second")
    await until(lambda: len(finals(api, USER)) == 2, "the second answered")
    await r.settled()
    prompts = [f["params"]["prompt"] for f in r.frames() if f.get("method") == "session/prompt"]
    assert prompts == [[{"type": "text", "text": "text first"}], [{"type": "text", "text": "text second"}]], \
        "only the captions reached the agent"
    first, second = finals(api, USER)
    notice, answer = first.split("\n\n")[:2]
    assert notice.startswith('Not sent to the agent: "report.bin".') and answer == "first", "said above the answer"
    assert second.startswith('Not sent to the agent: "huge.log". It gets text files of up to 512 KB')
    fetched = [c.params["file_id"] for c in api.calls("getFile")]
    assert len(fetched) == 1, "the file larger than the relay sends was not downloaded"


async def test_a_voice_message_is_named_as_not_sent_and_never_downloaded(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.voice(USER, b"OggS\x00voice")
    await until(lambda: api.bot_messages(USER), "answered")
    await r.settled()
    [answer] = [m["text"] for m in api.bot_messages(USER)]
    assert answer.startswith('Not sent to the agent: "voice message".')
    assert not api.calls("getFile") and not [f for f in r.frames() if f.get("method") == "session/prompt"]


async def test_a_strangers_file_is_never_downloaded(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(STRANGER)
    api.document(STRANGER, b"hello", "notes.txt", "text/plain", caption="text hi")
    await until(lambda: api.bot_messages(STRANGER), "the stranger is refused")
    await r.settled()
    assert not api.calls("getFile")
    assert not [f for f in r.frames() if f.get("method") == "session/prompt"]


async def test_a_file_alone_the_agent_cannot_be_sent_is_answered_by_the_notice_not_by_an_empty_prompt(
        api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.document(USER, b"%PDF-1.7\n\x00binary", "scan.pdf", "application/pdf")
    await until(lambda: api.bot_messages(USER), "answered")
    await r.settled()
    assert not [f for f in r.frames() if f.get("method") == "session/prompt"], "the agent got an empty prompt"
    [answer] = [m["text"] for m in api.bot_messages(USER)]
    assert answer.startswith('Not sent to the agent: "scan.pdf".')


STICKER = {"sticker": {"file_id": "stk1", "file_unique_id": "ustk1", "type": "regular", "width": 512,
                       "height": 512, "is_animated": False, "is_video": False, "emoji": "\N{THUMBS UP SIGN}"}}
LOCATION = {"location": {"latitude": 52.52, "longitude": 13.405}}


async def test_a_sticker_or_a_location_is_named_as_not_sent_instead_of_met_with_silence(
        api: FakeBotApi, tg: TgFactory) -> None:
    """Nothing the agent could read: the person reads which of the two it never got, once each, and
    nothing is downloaded or prompted. Before, neither got a word back."""
    r = await tg()
    api.private(USER)
    api.sends(USER, STICKER)
    await until(lambda: api.bot_messages(USER), "the sticker is answered")
    api.sends(USER, LOCATION)
    await until(lambda: len(api.bot_messages(USER)) == 2, "the location is answered")
    await r.settled()
    texts = [m["text"] for m in api.bot_messages(USER)]
    assert [t.split(".")[0] for t in texts] == ['Not sent to the agent: "sticker"', 'Not sent to the agent: "location"']
    assert not api.calls("getFile") and "session/prompt" not in r.methods()


async def test_in_a_group_only_a_sticker_answering_the_bot_is_named(api: FakeBotApi, tg: TgFactory) -> None:
    """A sticker among people is not for the bot (nothing said); one in reply to the bot's message is."""
    r = await tg()
    group = api.group(-100777)
    api.say(group, "/new", user=USER)
    await until(lambda: api.bot_messages(group), "the group's /new is answered")
    api.sends(group, STICKER, user=USER)
    await r.settled()
    assert len(api.bot_messages(group)) == 1, "a sticker among people is not the bot's"
    [reply] = api.bot_messages(group)
    api.sends(group, STICKER, user=USER, reply_to=reply["message_id"])
    await until(lambda: len(api.bot_messages(group)) == 2, "the sticker answering the bot is answered")
    await r.settled()
    assert api.bot_messages(group)[-1]["text"].startswith('Not sent to the agent: "sticker".')



async def test_an_album_is_one_message_the_agent_reads_whole_and_answers_once(api: FakeBotApi, tg: TgFactory) -> None:
    """Photos sent together come as an update each, the caption on the first: the agent reads the caption
    with every photo in one prompt, and the chat reads one answer (before: an answer a photo, and two
    "queued" receipts). Parts that arrive after the poll that brought the first join it."""
    r = await tg()
    api.private(USER)
    jpeg = b"\xff\xd8" + b"\0" * 64
    api.album(USER, [jpeg, jpeg], caption="report_images")
    await asyncio.sleep(0.1)  # a poll answers with what is there: the third part comes after it
    api.album(USER, [jpeg])  # (the same album: its caption was on the first part)
    await until(lambda: finals(api, USER), "answered")
    await r.settled()
    prompts = [f for f in r.frames() if f.get("method") == "session/prompt"]
    assert len(prompts) == 1, "one prompt for the album"
    blocks = prompts[0]["params"]["prompt"]
    assert [b["type"] for b in blocks] == ["text", "image", "image", "image"]
    [answer] = finals(api, USER)
    assert answer.startswith("images:3") and len(api.bot_messages(USER)) == 1, "one answer, no receipts"
    assert len(api.calls("getFile")) == 3


async def test_an_albums_every_caption_reaches_the_agent_in_order(api: FakeBotApi, tg: TgFactory) -> None:
    """A person may give each photo of an album its own caption: the agent reads every one (before, only
    the first: the others were lost without a word)."""
    r = await tg()
    api.private(USER)
    jpeg = b"\xff\xd8" + b"\0" * 64
    api.album(USER, [jpeg, jpeg, jpeg], captions=["report_images", "", "this one fails on CI"])
    await until(lambda: finals(api, USER), "answered")
    await r.settled()
    assert r.prompts() == ["report_images\n\nthis one fails on CI"]
    [prompt] = [f for f in r.frames() if f.get("method") == "session/prompt"]
    assert [b["type"] for b in prompt["params"]["prompt"]] == ["text", "image", "image", "image"]


async def test_an_edit_of_an_album_parts_caption_is_an_edit_of_the_album_not_a_message(
        api: FakeBotApi, tg: TgFactory) -> None:
    """The album is journaled as its first part: an edit of another part's caption is said not sent, as
    for any message the agent read (before: that part was taken as a message of its own, late)."""
    r = await tg()
    api.private(USER)
    jpeg = b"\xff\xd8" + b"\0" * 64
    parts = api.album(USER, [jpeg, jpeg], captions=["report_images", "the second"])
    await until(lambda: finals(api, USER), "answered")
    await r.settled()
    api.edit(USER, parts[1]["message_id"], "the second, fixed")
    said = edit_wording.edit_not_sent_text("the second, fixed")
    await until(lambda: said in [m["text"] for m in api.bot_messages(USER)], "said not sent")
    await r.settled()
    assert r.prompts() == ["report_images\n\nthe second"], "no second prompt"
    assert len(api.calls("getFile")) == 2, "the photo is not fetched again for an edit of the album"


async def test_in_a_group_an_album_whose_caption_mentions_the_bot_is_one_message(
        api: FakeBotApi, tg: TgFactory) -> None:
    """Only the first part carries the caption, and so the mention: the other parts are the bot's too.
    An album among people, mentioning nobody, is not the bot's."""
    r = await tg()
    group = api.group(-100778)
    jpeg = b"\xff\xd8" + b"\0" * 64
    api.album(group, [jpeg, jpeg], user=USER, group="11")  # people sharing photos: nothing for the bot
    api.album(group, [jpeg, jpeg, jpeg], caption=f"@{api.me['username']} report_images", user=USER, group="22")
    await until(lambda: finals(api, group), "answered")
    await r.settled()
    [answer] = finals(api, group)
    assert answer.startswith("images:3") and len(r.prompts()) == 1, answer
