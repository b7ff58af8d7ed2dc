"""The dashboard when the relay's store cannot take a message because its disk is full (SQLITE_FULL,
made here with ``max_page_count``): the composer's request is answered 503 with a sentence saying so,
logged as one line without a traceback, and the same message sent again once there is room is
answered as usual."""

from __future__ import annotations

import logging

import pytest

from core.store import Store, StoreError
from core.store.records import STORE_FULL

from .conftest import DemoRelayFactory
from .test_dashboard_relay import TAB, answered

#: Longer than a page: journaling it needs pages the full file cannot have.
TEXT = "hello " + "x" * 6000


def fill(store: Store) -> None:
    """Leave the store's file no room: cap it at its size and fill its free pages."""
    backend = store.backend
    backend.execute("CREATE TABLE filler (data BLOB)")
    [(pages,)] = backend.execute("PRAGMA page_count").rows
    backend.execute(f"PRAGMA max_page_count = {pages}")
    for size in (2000, 200, 20):
        with pytest.raises(StoreError):
            for _ in range(10_000):
                backend.execute(f"INSERT INTO filler VALUES (zeroblob({size}))")


def make_room(store: Store) -> None:
    store.backend.execute("DROP TABLE filler")
    store.backend.execute("PRAGMA max_page_count = 1073741823")


async def test_a_message_the_full_store_cannot_take_is_refused_in_words_and_taken_once_there_is_room(
        demo_relay: DemoRelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    relay = await demo_relay()
    assert relay.store is not None
    stream = await relay.events(TAB)
    fill(relay.store)
    with caplog.at_level(logging.WARNING):
        refused = await relay.post(TAB, "messages", {"text": TEXT, "id": "m1"})
        assert refused.status == 503 and (await refused.json()) == {"error": STORE_FULL}
    [record] = [r for r in caplog.records if "was not taken" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "database or disk is full" in record.getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    make_room(relay.store)
    taken = await relay.post(TAB, "messages", {"text": TEXT, "id": "m1"})
    assert taken.status == 202
    await stream.until(answered("demo agent"), "the demo's answer")
    assert stream.texts("user") == [TEXT]
