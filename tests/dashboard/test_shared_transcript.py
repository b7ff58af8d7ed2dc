"""The dashboard's transcript in the store relays share (``SharedTranscript``) and its events passed
between relays (``DashboardSurface.on_shared``), on both backends: two stores on one database stand for
two relays, a notification carries what changed, the other reads it in the store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from core.engine.host import StoreState
from core.store import Notifier
from core.surface_api import Button, Text
from surfaces.dashboard.render import DashboardFormatter
from surfaces.dashboard.shared import SharedTranscript
from surfaces.dashboard.surface import DashboardSurface, conversation_key
from tests.store.conftest import BACKENDS, Place, place_for

TAB = "tab-1"
CHANNEL = "surface_dashboard"


@pytest.fixture(params=BACKENDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    return place_for(request, tmp_path)


def test_a_tab_written_by_one_relay_reads_the_same_on_another(place: Place) -> None:
    with place.open() as a_store, place.open() as b_store:
        a, b = SharedTranscript(StoreState(a_store, "dashboard")), SharedTranscript(StoreState(b_store, "dashboard"))
        asked = b.add(TAB, "user", "hello", message_id="u-1")
        assert asked is not None and b.add(TAB, "user", "hello again", message_id="u-1") is None  # a resend
        first = a.add(TAB, "agent", "thinking", buttons=(Button("Allow", "t1", "primary"),), blocks=({"k": 1},))
        second = a.add(TAB, "agent", "second")
        assert first is not None and second is not None
        assert a.update(TAB, first.id, "the answer", plain=True) is not None
        assert a.update(TAB, "no-such-id", "x") is None
        edited = b.update(TAB, second.id, "second")  # a message another relay posted (a new owner's edit)
        assert edited is not None and edited.role == "agent"
        assert [(e.id, e.role, e.text) for e in b.entries(TAB)] == [
            ("u-1", "user", "hello"), (first.id, "agent", "the answer"), (second.id, "agent", "second")]
        assert b.get(TAB, first.id) == a.get(TAB, first.id) and b.get(TAB, first.id).plain  # type: ignore[union-attr]
        assert b.entries("another-tab") == []
        assert b.delete(TAB, second.id) and not b.delete(TAB, second.id)
        assert [e.id for e in a.entries(TAB)] == ["u-1", first.id]
        file_id = a.add_file(TAB, "answer-rest.md", "é\x00rest".encode())
        assert b.file(TAB, file_id) == ("answer-rest.md", "é\x00rest".encode())
        assert b.file("another-tab", file_id) is None


async def test_a_change_on_the_owner_reaches_the_tabs_watching_on_another_relay(place: Place) -> None:
    with place.open() as a_store, place.open() as b_store:
        owner = DashboardSurface(SharedTranscript(StoreState(a_store, "dashboard")),
                                 lambda payload: Notifier(a_store).notify(CHANNEL, payload))
        other = DashboardSurface(SharedTranscript(StoreState(b_store, "dashboard")))
        async with Notifier(b_store).listen(CHANNEL) as notes:
            async def heard() -> None:  # the next note, handled where the relays' listeners would
                note = await asyncio.wait_for(anext(notes), 10)
                assert len(note.payload) < 8000  # the event names the message; its text is in the store
                await other.on_shared(note.payload)
                await owner.on_shared(note.payload)  # its own: skipped

            with other.subscribe(TAB) as watching:
                key = conversation_key(TAB)
                await owner.typing(key, True)
                sent = await owner.send(key, DashboardFormatter().render((Text("part"),)))
                await owner.edit(key, sent, DashboardFormatter().render((Text("part and whole " + "x" * 9000),)))
                for _ in range(3):
                    await heard()
                await owner.delete(key, sent)
                await owner.typing(key, False)
                for _ in range(2):
                    await heard()
                events = [watching.queue.get_nowait() for _ in range(watching.queue.qsize())]
        assert [e["type"] for e in events] == ["typing", "message", "message", "delete", "typing"]
        assert events[1]["text"].startswith("part and whole")  # read when heard: the latest content
        assert events[2]["id"] == sent and events[3]["id"] == sent
        assert [e["active"] for e in (events[0], events[4])] == [True, False]
        assert not other.snapshot(TAB)["typing"]
        await other.on_shared("not json")
        await other.on_shared(json.dumps({"from": "x", "tab": "../bad", "type": "message", "id": "1"}))
        assert watching.queue.empty()
