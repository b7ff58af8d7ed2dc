"""The dashboard when the relay's store cannot take a message because its disk is full (SQLITE_FULL,
made here with ``max_page_count``): the composer's request is answered 503 with a sentence saying so,
logged as one line without a traceback, and the same message sent again once there is room is
answered as usual."""

from __future__ import annotations

import logging

import pytest

from core.store.records import STORE_FULL
from tests.full_store import LONG_TEXT, fill, make_room

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
