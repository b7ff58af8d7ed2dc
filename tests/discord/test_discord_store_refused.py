"""Discord while the relay's store cannot keep a message (its disk is full: SQLITE_FULL, made with
``tests.full_store``). Discord sends each message once, so one the store refused must not be lost: the
relay holds it and tries again until there is room, tells its person once, keeps the channel's later
messages behind it, and never logs a traceback. A relay stopped meanwhile answers it after its next
start (the catch-up finds it)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from core.engine import edit_wording
from core.store.records import STORE_AWAY_HELD, STORE_FAILED_HELD, STORE_FULL_HELD
from tests.discord.harness import ALICE, BOB, Relay, RelayFactory, until
from tests.full_store import LONG_TEXT, fill, locked, make_room
from tests.waiting import fast_sleep

ANSWER_OF_LONG = "echo: hello"
HELD = {STORE_AWAY_HELD, STORE_FAILED_HELD, STORE_FULL_HELD}  # the scripted agent echoes a prompt that is no script


def _held(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "could not save Discord message" in r.getMessage()]


async def _full_after_one_answer(relay: RelayFactory, caplog: pytest.LogCaptureFixture,
                                 level: int) -> tuple[Relay, int]:
    """A relay that answered Alice's DM once, whose store is full now; the relay and the DM."""
    caplog.set_level(level)
    r = await relay(reconnect_sleep=fast_sleep)
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text before")
    await until(lambda: r.bot_texts(dm) and r.idle(), "answered")
    fill(r.store)
    return r, dm


async def test_a_message_the_full_store_refused_is_held_told_once_and_answered_once_there_is_room(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    r, dm = await _full_after_one_answer(relay, caplog, logging.DEBUG)
    await r.fake.say(dm, ALICE, LONG_TEXT)
    await r.fake.say(dm, ALICE, "text written while it waits")
    await r.fake.say(r.channel, BOB, "people talking among themselves, no mention")
    await until(lambda: len(r.bot_texts(dm)) == 2, "the person is told")
    await until(lambda: "refused Discord message" in caplog.text and "(3 times)" in caplog.text, "tried again")
    assert r.bot_texts(dm)[1] == STORE_FULL_HELD
    assert r.prompts() == ["text before"], "nothing reached the agent while the store refused"
    make_room(r.store)
    await until(lambda: len(r.prompts()) == 3 and r.idle(), "both answered")
    assert r.prompts() == ["text before", LONG_TEXT, "text written while it waits"], "in the order written"
    texts = r.bot_texts(dm)
    assert texts.count(STORE_FULL_HELD) == 1, "told once, though refused again and again"
    answers = [i for i, t in enumerate(texts) if t.startswith((ANSWER_OF_LONG, "written while it waits"))]
    assert len(answers) == 2 and texts.index(STORE_FULL_HELD) < answers[0], texts
    assert r.bot_texts(r.channel) == [], "nobody was told anything about a message not for the bot"
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"
    [long_id] = [m["id"] for m in r.fake.messages(dm) if m["content"] == LONG_TEXT]
    [dm_held] = [rec for rec in _held(caplog) if str(long_id) in rec.getMessage()]
    assert dm_held.levelno == logging.WARNING and "database or disk is full" in dm_held.getMessage()
    assert any("after the store refused it" in rec.getMessage() for rec in caplog.records)


async def test_a_relay_stopped_while_it_holds_a_message_answers_it_after_its_next_start(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    r, dm = await _full_after_one_answer(relay, caplog, logging.INFO)
    await r.fake.say(dm, ALICE, LONG_TEXT)
    await until(lambda: len(_held(caplog)) == 1, "held")
    await r.stop()  # returns: nothing waits on the held message
    await r.start()  # (the cap on the file's size was its connection's: the new one has room)
    await until(lambda: len(r.prompts()) == 2 and r.idle(), "answered after the restart")
    assert r.prompts() == ["text before", LONG_TEXT]
    assert [t for t in r.bot_texts(dm) if t.startswith(ANSWER_OF_LONG)], r.bot_texts(dm)
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


async def test_a_first_mention_the_held_store_refuses_tells_its_person_once_and_is_answered_in_its_thread(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    """A mention in a channel the relay never saw, while another writer holds the store: noting where
    the channel's catch-up starts, and the thread to open, is refused before the mention is handed over.
    Its person is told at once, and once, that it waits (under the mention: there is no thread yet), not
    seconds later when a try gets as far as the hand-over; once the store is free the thread opens and
    the mention is answered there, once."""
    caplog.set_level(logging.INFO)
    r = await relay(busy_timeout_s=0.05)
    with locked(r.store.path):
        mention = await r.fake.say(r.channel, ALICE, "text first words", mention=True)
        await until(lambda: r.bot_texts(r.channel), "the person is told")
        assert r.fake.thread_for(mention) is None, "told at the first refusal, not once a thread was opened"
        assert r.prompts() == []
    await until(lambda: r.fake.thread_for(mention) is not None and r.prompts() and r.idle(), "answered")
    told = r.bot_texts(r.channel)
    assert len(told) == 1 and told[0] in HELD, told
    [notice] = r.fake.bot_messages(r.channel)
    assert str((notice.get("message_reference") or {}).get("message_id")) == str(mention), "under the mention"
    assert r.prompts() == ["text first words"]
    [answer] = r.bot_texts(mention)  # answered once, in the mention's thread
    assert answer.startswith("first words"), answer
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


async def test_an_edit_and_a_deletion_the_held_store_refuses_are_taken_once_it_is_free(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    """Discord sends an edit or a deletion once: while another writer holds the store, each is tried again
    (said once in the log) until the store takes it, then answered, once (before: logged, and lost)."""
    caplog.set_level(logging.INFO)
    r = await relay(busy_timeout_s=0.05, reconnect_sleep=fast_sleep)
    dm = r.fake.dm(ALICE)
    first = await r.fake.say(dm, ALICE, "text hello")
    await until(lambda: r.bot_texts(dm) and r.idle(), "answered")
    said = edit_wording.edit_not_sent_text("text hello again")
    with locked(r.store.path):
        await r.fake.edit(dm, first, "text hello again")
        await until(lambda: "could not take an edit" in caplog.text, "refused")
        await asyncio.sleep(0.2)  # tried again while the file is held
        assert said not in r.bot_texts(dm)
    await until(lambda: said in r.bot_texts(dm), "the edit taken once the store is free")
    with locked(r.store.path):
        await r.fake.delete(dm, first)
        await until(lambda: "could not take the deletion" in caplog.text, "refused")
        await asyncio.sleep(0.2)
    await until(lambda: edit_wording.DELETED_AFTER_READ in r.bot_texts(dm), "the deletion taken once it is free")
    await until(r.idle, "idle")
    texts = r.bot_texts(dm)
    assert texts.count(said) == 1 and texts.count(edit_wording.DELETED_AFTER_READ) == 1, texts
    refusals = [rec for rec in caplog.records if "could not take" in rec.getMessage()]
    assert len(refusals) == 2 and all(rec.levelno == logging.WARNING for rec in refusals), "each said once"
    assert sum("after the store refused it" in rec.getMessage() for rec in caplog.records) >= 2
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"
