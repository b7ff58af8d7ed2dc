"""Telegram while the relay's store cannot journal a message (its disk is full: SQLITE_FULL, made with
``tests.full_store``): the update is not confirmed (a poll's offset stays, a webhook post is answered
500), so Telegram offers it again and again, and its person is told once, not on every offer, that it
will be answered once there is room; then it is answered, once."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from core.store.records import STORE_AWAY_HELD, STORE_FAILED_HELD, STORE_FULL_HELD
from tests.fakes.telegram_api import FakeBotApi
from tests.full_store import LONG_TEXT, fill, locked, make_room
from tests.telegram.conftest import USER, TgFactory, on_a_webhook
from tests.telegram.test_telegram_buttons import ASKS, asked, keyboard
from tests.waiting import fast_sleep, until

HELD = {STORE_FULL_HELD, STORE_AWAY_HELD, STORE_FAILED_HELD}


async def test_a_message_the_full_store_refused_is_said_held_once_and_answered_once_there_is_room(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    api.private(USER)
    r = await tg(poll_sleep=fast_sleep)
    api.say(USER, "text before")
    await until(lambda: any("before" in t for t in r.texts(USER)), "answered")
    await r.settled()
    fill(r.store)
    written = api.say(USER, LONG_TEXT)

    def offers() -> int:
        return sum(any(u.get("message", {}).get("message_id") == written["message_id"] for u in c.result or [])
                   for c in api.calls("getUpdates"))

    await until(lambda: offers() >= 3, "Telegram offered it again and again")
    assert r.texts(USER).count(STORE_FULL_HELD) == 1, "told once, not on every offer"
    assert r.prompts() == ["text before"], "nothing reached the agent while the store refused"
    make_room(r.store)
    await until(lambda: any(t.startswith("echo: hello") for t in r.texts(USER)), "answered once there is room")
    await r.settled()
    assert r.prompts() == ["text before", LONG_TEXT]
    texts = r.texts(USER)
    assert texts.count(STORE_FULL_HELD) == 1 and texts.index(STORE_FULL_HELD) < len(texts) - 1, texts
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


async def test_a_webhook_post_the_full_store_refused_is_answered_500_said_once_and_taken_once_there_is_room(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Telegram posts the update again while the relay answers anything but 200: each refusal is one
    warning, the person is told once, and once there is room the post is taken and answered."""
    caplog.set_level(logging.INFO)
    r = await on_a_webhook(tg, api, monkeypatch)
    api.private(USER)
    fill(r.store)
    api.say(USER, LONG_TEXT)
    assert [await api.deliver() for _ in range(3)] == [[500]] * 3, "not taken: Telegram posts it again"
    await until(lambda: STORE_FULL_HELD in r.texts(USER), "the person is told")
    make_room(r.store)
    assert await api.deliver() == [200]
    await until(lambda: any(t.startswith("echo: hello") for t in r.texts(USER)), "answered")
    await r.settled()
    assert r.texts(USER).count(STORE_FULL_HELD) == 1 and r.prompts() == [LONG_TEXT]
    refusals = [rec for rec in caplog.records if "could not store a Telegram update" in rec.getMessage()]
    assert len(refusals) == 3 and all(rec.levelno == logging.WARNING for rec in refusals)
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


async def test_a_repeat_refused_after_the_held_message_was_saved_is_taken_and_told_nobody(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that flaps (another writer holds the file, lets go, holds it again): a webhook post is
    refused, the relay holds the message and saves it once the file is free, then Telegram posts the
    update again while the file is held once more. That post repeats a message already journaled: it is
    taken (200, so Telegram stops), nobody is told a second time, and the message is answered once."""
    caplog.set_level(logging.INFO)
    r = await on_a_webhook(tg, api, monkeypatch, poll_sleep=fast_sleep, busy_timeout_s=0.1)
    api.private(USER)
    api.say(USER, "text flapping store")
    with locked(r.store.path):
        assert await api.deliver() == [500], "not journaled: Telegram posts it again"
        await until(lambda: set(r.texts(USER)) & HELD, "the person is told")
    await until(lambda: any("flapping store" in t for t in r.texts(USER)), "the held message is answered")
    with locked(r.store.path):
        assert await api.deliver() == [200], "a repeat of a message the relay saved is taken"
    await r.settled()
    told = [t for t in r.texts(USER) if t in HELD]
    assert told == [STORE_AWAY_HELD] and r.prompts() == ["text flapping store"], r.texts(USER)  # held: for now
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"



async def test_an_answer_ending_while_another_writer_holds_the_store_is_shown_whole_and_nothing_else(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture) -> None:
    """The store refuses the notes of where an answer is shown (another writer holds the file) just as
    the answer ends. Those notes only serve a restart: the answer is shown whole, the person reads no
    notice that it was lost or not accepted, and the log says once what was not noted, as a warning."""
    caplog.set_level(logging.INFO)
    api.private(USER)
    r = await tg(poll_sleep=fast_sleep, busy_timeout_s=0.1)
    api.say(USER, "text first words\nsleep 0.5\ntext  last words")
    await until(lambda: any("first words" in str(c.params.get("text")) for c in api.calls("sendMessageDraft")),
                "the answer streams in a draft")
    with locked(r.store.path):
        await until(lambda: any("last words" in t for t in r.texts(USER)), "the answer is shown")
        await until(lambda: "could not be noted as given" in caplog.text, "its end could not be noted")
    await r.settled()
    texts = r.texts(USER)
    assert len(texts) == 1 and texts[0].startswith("first words last words"), texts
    unnoted = [rec for rec in caplog.records if "could not note where the answer" in rec.getMessage()]
    assert len(unnoted) == 1 and unnoted[0].levelno == logging.WARNING
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelno >= logging.ERROR], "an error was logged"


async def test_a_tool_approved_while_another_writer_holds_the_store_runs_and_the_answer_ends(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture) -> None:
    """The note that a tool may run (so that a restart asks before sending the message again) is refused
    by a held store: the tool the person allowed still runs and the answer ends as it would have; the log
    says once what was not noted. Before, the turn failed as a problem the relay did not expect."""
    caplog.set_level(logging.INFO)
    api.private(USER)
    r = await tg(poll_sleep=fast_sleep, busy_timeout_s=0.1)
    api.say(USER, ASKS)
    prompt = await asked(api, r, USER)
    with locked(r.store.path):
        tap = api.press(USER, prompt["message_id"], keyboard(prompt)[0][1])
        await until(lambda: tap in api.answered, "the tap is answered")
        await until(lambda: any("permission:selected:allow-once" in t for t in r.texts(USER)), "the tool ran")
        await until(lambda: "could not be noted as given" in caplog.text, "the answer ended")
    await r.settled()
    assert api.answered[tap] is not None and api.answered[tap].startswith("Allowed once")
    texts = r.texts(USER)
    assert texts[0] == "checking" and "allow-oncedone" in texts[-1] and not set(texts) & HELD, texts
    assert not any("did not expect" in t for t in texts), texts
    unnoted = [rec for rec in caplog.records if "could not note in the store that a tool may run" in rec.getMessage()]
    assert len(unnoted) == 1 and unnoted[0].levelno == logging.WARNING
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelno >= logging.ERROR], "an error was logged"


async def _flap(path: str | Path, stop: asyncio.Event) -> None:
    """Another writer holds the store's file 0.3 s, lets it go 0.2 s, again, until ``stop``."""
    while not stop.is_set():
        with locked(path):
            await asyncio.sleep(0.3)
        await asyncio.sleep(0.2)


async def test_a_chat_written_in_while_the_store_flaps_is_answered_in_order_once_with_one_notice(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture) -> None:
    """The store is held and let go again and again while a person writes six messages. Polling goes on
    (a store that refuses an update is not a lost connection, whose reconnects would wait longer each
    time): every message is answered once, in the order written, the chat reads one notice that a
    message is held, and nothing is logged as an error."""
    caplog.set_level(logging.INFO)
    api.private(USER)
    r = await tg(poll_sleep=fast_sleep, busy_timeout_s=0.05)
    stop = asyncio.Event()
    flapping = asyncio.create_task(_flap(r.store.path, stop))
    written = [f"text answer number {i}\nsleep 0.1\ntext  end {i}" for i in range(6)]
    try:
        for text in written:
            api.say(USER, text)
            await asyncio.sleep(0.3)
        await until(lambda: "held, and offered to the store again" in caplog.text, "a message was held")
    finally:
        stop.set()
        await flapping
    await until(lambda: len(r.prompts()) == len(written), "every message reached the agent")
    await r.settled()
    assert r.prompts() == written, "each once, in the order written"
    answers = [t for t in r.texts(USER) if t.startswith("answer number")]
    assert [a.split("\n")[0] for a in answers] == [f"answer number {i} end {i}" for i in range(6)], answers
    assert sum(t in HELD for t in r.texts(USER)) == 1, r.texts(USER)
    assert r.launched.receiver.reconnects == 0 and "stopped receiving" not in caplog.text
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelno >= logging.ERROR], "an error was logged"
