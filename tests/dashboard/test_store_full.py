"""The dashboard when the relay's store cannot take a message because its disk is full (SQLITE_FULL,
made here with ``max_page_count``): the composer's request is answered 503 with a sentence saying so,
logged as one line without a traceback, and the same message sent again once there is room is
answered as usual."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from core.store.records import STORE_AWAY, STORE_FULL
from tests.full_store import LONG_TEXT, fill, fill_file, locked, make_room, make_room_in_file

from .conftest import DemoRelayFactory
from .test_dashboard_relay import TAB, answered


async def test_a_message_the_full_store_cannot_take_is_refused_in_words_and_taken_once_there_is_room(
        demo_relay: DemoRelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    relay = await demo_relay()
    assert relay.store is not None
    stream = await relay.events(TAB)
    fill(relay.store)
    with caplog.at_level(logging.WARNING):
        refused = await relay.post(TAB, "messages", {"text": LONG_TEXT, "id": "m1"})
        assert refused.status == 503 and (await refused.json()) == {"error": STORE_FULL}
    [record] = [r for r in caplog.records if "was not taken" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "database or disk is full" in record.getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    make_room(relay.store)
    taken = await relay.post(TAB, "messages", {"text": LONG_TEXT, "id": "m1"})
    assert taken.status == 202
    await stream.until(answered("demo agent"), "the demo's answer")
    assert stream.texts("user") == [LONG_TEXT]


def _pack_behind(conn: sqlite3.Connection) -> None:
    """Rows written after the answer's until its page is full too: the answer, growing, needs a page the
    full file cannot have (a full disk refuses the same write)."""
    for size in (400, 40, 4):
        try:
            for n in range(10_000):
                conn.execute("INSERT INTO messages (tab, id, role, text, updated_at) "
                             "VALUES ('packing', ?, 'agent', ?, 0)", (f"{size}-{n}", "x" * size))
        except sqlite3.OperationalError:
            continue


async def test_an_answer_under_way_when_the_disk_fills_goes_on_showing_marked_unsaved(
        demo_relay: DemoRelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    """The tab does not go silent where the last saved edit left the answer: the rest is shown live, each
    message marked unsaved (the page says a reload loses it), with one warning in the log."""
    relay = await demo_relay()
    assert relay.store is not None
    stream = await relay.events(TAB)
    taken = await relay.post(TAB, "messages", {"text": "slow", "id": "m1"})
    assert taken.status == 202
    await stream.until(lambda s: any(len(t.split()) >= 2 for t in s.texts()), "the answer's first words, saved")
    [saved] = [m for m in stream.view.values() if m["role"] == "agent"]
    assert not saved.get("unsaved")
    shown_before = len(saved["text"].split())
    assert relay.dashboard is not None
    transcript = relay.dashboard.surface.transcript._conn  # the only way to fill the file it writes
    with caplog.at_level(logging.WARNING):
        fill_file(transcript)
        _pack_behind(transcript)
        await stream.until(lambda s: s.view[saved["id"]].get("unsaved")
                           and len(s.view[saved["id"]]["text"].split()) > shown_before + 1, "the answer goes on")
        stopped = await relay.post(TAB, "stop", {})
        assert stopped.status == 200
        await stream.until(lambda s: not s.typing, "the turn ended")
    answer = stream.view[saved["id"]]
    assert answer["unsaved"] and "arrives" in answer["text"], answer
    [record] = [r for r in caplog.records if "shown live, unsaved" in r.getMessage()]
    assert record.levelno == logging.WARNING and "database or disk is full" in record.getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    transcript.execute("DELETE FROM messages WHERE tab = 'packing'")
    make_room_in_file(transcript)
    again = await relay.events(TAB)  # a reload: what was saved, without the unsaved edits
    assert not any(m.get("unsaved") for m in again.view.values())


async def test_a_message_sent_while_another_writer_holds_the_store_is_refused_as_for_now_and_taken_after(
        demo_relay: DemoRelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    """Another writer holds the store's file past the busy timeout (a second relay in a long write, a
    ``sqlite3`` shell left in a transaction): the composer reads that the database did not answer just
    now and to send it again in a moment, not "a problem the relay did not expect"; sent again once the
    file is let go, it is answered."""
    relay = await demo_relay(busy_timeout_s=0.05)
    assert relay.store is not None
    stream = await relay.events(TAB)
    with caplog.at_level(logging.WARNING), locked(relay.store.path):
        refused = await relay.post(TAB, "messages", {"text": "held store", "id": "m1"})
        assert refused.status == 503 and (await refused.json()) == {"error": STORE_AWAY}
    [record] = [r for r in caplog.records if "was not taken" in r.getMessage()]
    assert "locked" in record.getMessage() and record.exc_info is None
    taken = await relay.post(TAB, "messages", {"text": "held store", "id": "m1"})
    assert taken.status == 202
    await stream.until(answered("demo agent"), "the demo's answer")
    assert stream.texts("user") == ["held store"]
