"""Faults of the Discord surface, through the real discord.py against the fake Discord.

Strangers cost nothing: a person not on the allow-list gets their one refusal, and nothing they
attach is downloaded; a message from a server the bot has not loaded yet is not taken for a DM.
"""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from core.engine.wording import UNADDRESSABLE_NOTE
from tests.discord.harness import ALICE, MALLORY, RelayFactory, until
from tests.fakes.discord_api import Failure, FakeDiscord

SECRET_TEXT = "the launch code is 0000"

IMAGE = ("big.png", "image/png", b"\x89PNG" + b"\0" * 4096)


async def test_a_strangers_attachments_are_never_downloaded(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(MALLORY)
    for i in range(3):
        await r.fake.say(dm, MALLORY, f"look at this {i}", attachments=(IMAGE, IMAGE))
    await until(lambda: r.bot_texts(dm), "the stranger is refused")
    await r.settled()
    assert len(r.bot_texts(dm)) == 1 and str(MALLORY) in r.bot_texts(dm)[0], "refused once, with their id"
    assert r.fake.downloads == 0
    assert r.prompts() == []
    ally = r.fake.dm(ALICE)
    await r.fake.say(ally, ALICE, "and this one", attachments=(IMAGE,))
    await until(lambda: r.bot_texts(ally) and r.idle(), "the allowed person is answered")
    assert r.fake.downloads == 1, "an allowed person's image is still fetched"


async def test_a_message_from_a_server_not_loaded_yet_is_not_taken_for_a_dm(relay: RelayFactory) -> None:
    r = await relay()
    elsewhere = r.fake.unloaded_guild()
    await r.fake.say(elsewhere, ALICE, "text hello from a server the bot does not serve", mention=True)
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text later")
    await until(lambda: r.bot_texts(dm) and r.idle(), "a later DM is answered")
    assert r.bot_texts(elsewhere) == [], "nothing is said in a channel that is not allowed"
    assert r.prompts() == ["text later"]


async def test_a_message_arriving_while_discord_py_waits_for_its_servers_does_not_skip_the_missed_one(
        relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text first")
    await until(lambda: r.bot_texts(dm) and r.idle(), "answered")
    await r.stop()
    r.fake.add_message(dm, ALICE, "text written while the relay was down")
    r.fake.after_ready.append(lambda: r.fake.say(dm, ALICE, "text written right after the restart"))
    await r.start()
    await until(lambda: len(r.prompts()) == 3 and r.idle(), "both are answered")
    assert r.prompts() == ["text first", "text written while the relay was down",
                           "text written right after the restart"], "in the order they were written"


async def test_a_message_discord_py_cannot_parse_is_skipped_once_and_the_next_is_answered(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    r = await relay()
    dm = r.fake.dm(ALICE)
    poison = await r.fake.say_unreadable(dm, ALICE, SECRET_TEXT)
    await r.fake.say(dm, ALICE, "text the next one")
    await until(lambda: r.bot_texts(dm) and r.idle(), "the next one is answered")
    assert r.prompts() == ["text the next one"]
    assert_skipped_once(caplog, poison)
    assert not r.store.record_inbound("discord", str(poison), "", {}), "stored as rejected"


async def test_a_missed_message_discord_py_cannot_parse_does_not_stop_the_catch_up(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text first")
    await until(lambda: r.bot_texts(dm) and r.idle(), "answered")
    await r.stop()
    poison = await r.fake.say_unreadable(dm, ALICE, SECRET_TEXT, live=False)
    r.fake.add_message(dm, ALICE, "text missed")
    await r.start()
    await until(lambda: len(r.prompts()) == 2 and r.idle(), "the missed one is answered")
    assert r.prompts() == ["text first", "text missed"]
    assert_skipped_once(caplog, poison)


def assert_skipped_once(caplog: pytest.LogCaptureFixture, message_id: int) -> None:
    skipped = [rec for rec in caplog.records
               if rec.levelno >= logging.WARNING and "could not be read" in rec.getMessage()]
    assert len(skipped) == 1 and str(message_id) in skipped[0].getMessage(), skipped
    assert [rec for rec in caplog.records if rec.levelno > logging.DEBUG and SECRET_TEXT in rec.getMessage()] == []


@pytest.mark.parametrize("how", ["author is a name", "no id", "not json"])
async def test_an_answer_discord_py_cannot_read_is_never_a_failure_notice_nor_an_unmarked_copy(
        relay: RelayFactory, how: str) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    r.fake.answer_oddly("send", how)  # the first message of the answer: shown, its id unknown to discord.py
    await r.fake.say(dm, ALICE, "text the beginning\nsleep 0.5\ntext  and the rest")
    await until(lambda: any("⏱" in t for t in r.bot_texts(dm)) and r.idle(), "the answer")
    await r.restart()  # a kept ("undelivered") answer would be sent again now
    await r.settled()
    texts = r.bot_texts(dm)
    assert "would not accept" not in "".join(texts) and r.store.pending_outbound() == [], texts
    if how == "author is a name":  # the id was still in the answer: edited as usual
        assert len(texts) == 1 and texts[0].startswith("the beginning and the rest"), texts
    else:
        assert texts[0].startswith("the beginning") and "⏱" not in texts[0], texts
        assert texts[1] == UNADDRESSABLE_NOTE and texts[2].startswith("the beginning and the rest")
        assert len(texts) == 3


async def test_failed_logins_close_what_they_opened_and_wait_what_discord_asked(
        relay: RelayFactory, fake_discord: FakeDiscord) -> None:
    unclosed: list[str] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: unclosed.append(context["message"]))
    waits: list[float] = []

    async def wait(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(0.01)

    fake = fake_discord
    fake.fail_next("application", Failure(429, retry_after=59.0, via=True))  # discord.py: RateLimited(59)
    fake.fail_next("application", Failure(400, 50035, "Invalid Form Body"))
    r = await relay(reconnect_sleep=wait)
    assert len(fake.calls_to("GET", "/oauth2/applications/@me")) == 3, "two failed logins, then one that worked"
    assert len(waits) == 2 and waits[0] >= 59.0, f"the wait Discord asked for: {waits}"
    dm = fake.dm(ALICE)
    await fake.say(dm, ALICE, "text hello")
    await until(lambda: r.bot_texts(dm) and r.idle(), "it answers")
    gc.collect()
    await asyncio.sleep(0)
    assert [m for m in unclosed if "Unclosed" in m] == [], unclosed
