"""The dashboard's transcript in the store relays share (``SharedTranscript``) and its events passed
between relays (``DashboardSurface.on_shared``), on both backends: two stores on one database stand for
two relays, a notification carries what changed, the other reads it in the store. Past ``max_tabs`` the
least recently used tab not answering loses its transcript, and a tab's load reads its own rows alone
(PostgreSQL's plan of it, logged by ``auto_explain``)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from core.engine.host import StoreState
from core.store import Notifier
from core.surface_api import Button, Text
from surfaces.dashboard.render import DashboardFormatter, DashboardMessage
from surfaces.dashboard.shared import ANSWERING_HELD_S, SharedTranscript
from surfaces.dashboard.surface import DashboardSurface, conversation_key
from surfaces.dashboard.transcript import Entry
from tests.postgres import PostgresServer
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


def test_a_message_a_dead_relay_posted_is_rewritten_in_its_place_by_the_next(place: Place) -> None:
    with place.open() as a_store, place.open() as b_store:
        a, b = SharedTranscript(StoreState(a_store, "dashboard")), SharedTranscript(StoreState(b_store, "dashboard"))
        cut = Entry("0" * 32, "agent", "the answer so f")
        assert a.add_many([(TAB, cut)], rewrite=True) == [cut]
        b.add(TAB, "user", "and then?", message_id="u-2")
        assert b.add_many([(TAB, Entry("0" * 32, "agent", "the answer so far", plain=True))], rewrite=True) == [None]
        assert [(e.id, e.text, e.plain) for e in a.entries(TAB)] == [
            ("0" * 32, "the answer so far", True), ("u-2", "and then?", False)]


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


def md(text: str) -> DashboardMessage:
    return DashboardFormatter().render((Text(text),))


async def test_past_max_tabs_the_least_recently_used_idle_tab_loses_its_transcript(place: Place) -> None:
    with place.open() as a_store, place.open() as b_store:  # two relays: each counts every relay's tabs
        a = DashboardSurface(SharedTranscript(StoreState(a_store, "dashboard"), max_tabs=2))
        b = DashboardSurface(SharedTranscript(StoreState(b_store, "dashboard"), max_tabs=2))
        await a.post_user("tab1", "first tab", "m1")
        old = await a.send(conversation_key("tab1"), md("an answer in the first tab"))
        await b.post_user("tab2", "second tab", "m2")
        for i in range(3):  # more messages in a tab already kept evict nothing
            await b.post_user("tab2", f"again {i}", f"m2-{i}")
        await a.typing(conversation_key("tab2"), True)  # their answer, on the other relay: no wait from now
        await a.typing(conversation_key("tab2"), False)
        await a.edit(conversation_key("tab1"), old, md("edited later, so the first tab is the more recent"))
        await b.typing(conversation_key("busy"), True)  # its answer runs: it does not count, nor is it evicted
        await b.send(conversation_key("busy"), md("answering"))
        await a.post_user("busy", "sent to another relay while it answers", "m-busy")  # its mark stays
        assert a.snapshot("tab1")["messages"] and a.snapshot("tab2")["messages"]
        await b.post_user("tab3", "a third tab", "m3")
        await b.typing(conversation_key("tab3"), True)  # its answer ends: it counts from now
        await b.typing(conversation_key("tab3"), False)
        assert a.snapshot("tab2")["messages"] == []
        assert [m["text"] for m in b.snapshot("tab1")["messages"]] == [
            "first tab", "edited later, so the first tab is the more recent"]
        assert [m["text"] for m in a.snapshot("busy")["messages"]] == [
            "answering", "sent to another relay while it answers"]
        await b.typing(conversation_key("busy"), False)  # its answer ended: now the least recent idle tab goes
        assert a.snapshot("tab1")["messages"] == []
        assert [m["text"] for m in a.snapshot("tab3")["messages"]] == ["a third tab"]
        assert len(a.snapshot("busy")["messages"]) == 2
        assert {key.split(":")[1] for key in StoreState(a_store, "dashboard").items()} == {"tab3", "busy"}


async def test_a_tab_whose_message_waits_for_its_answer_is_held_until_the_owner_starts_or_replies(
        place: Place) -> None:
    # A burst of more tabs than max_tabs: a question evicted before its answer began lost the tab's
    # transcript. The relay it was posted to marks the wait; the conversation's owner, another relay, ends it.
    with place.open() as a_store, place.open() as b_store:
        posted_to = DashboardSurface(SharedTranscript(StoreState(a_store, "dashboard"), max_tabs=1))
        owner = DashboardSurface(SharedTranscript(StoreState(b_store, "dashboard"), max_tabs=1))
        for tab in ("q1", "q2", "q3"):  # three questions at once, one tab kept: none is evicted yet
            await posted_to.post_user(tab, f"question in {tab}", f"m-{tab}")
        assert [len(owner.snapshot(t)["messages"]) for t in ("q1", "q2", "q3")] == [1, 1, 1]
        await owner.typing(conversation_key("q1"), True)  # q1's answer runs, then ends: q1 is idle again
        await owner.send(conversation_key("q1"), md("the answer"))
        await owner.typing(conversation_key("q1"), False)
        assert [len(owner.snapshot(t)["messages"]) for t in ("q1", "q2", "q3")] == [2, 1, 1]  # the only idle tab
        # A command's reply, no answer running: q2 waits no more and counts again; the tabs beyond one go.
        await owner.send(conversation_key("q2"), md("a command's reply"))
        assert [len(posted_to.snapshot(t)["messages"]) for t in ("q1", "q2", "q3")] == [0, 2, 1]
        await owner.typing(conversation_key("q3"), True)
        await owner.typing(conversation_key("q3"), False)  # q3's answer ended: q2 is now the older idle tab
        assert [len(posted_to.snapshot(t)["messages"]) for t in ("q1", "q2", "q3")] == [0, 0, 1]


async def test_a_tab_marked_answering_by_a_relay_that_died_is_evicted_once_the_mark_is_old(place: Place) -> None:
    with place.open() as a_store, place.open() as b_store:
        died = DashboardSurface(SharedTranscript(StoreState(a_store, "dashboard"), max_tabs=1))
        await died.typing(conversation_key("stuck"), True)  # killed mid-answer: never says the answer ended
        await died.send(conversation_key("stuck"), md("half an answer"))
        later = SharedTranscript(StoreState(b_store, "dashboard"), max_tabs=1,
                                 clock=lambda: time.time_ns() + int(ANSWERING_HELD_S * 1e9) + 1)
        later.add("fresh", "user", "a new tab")
        assert later.entries("stuck") == [] and [e.text for e in later.entries("fresh")] == ["a new tab"]


def test_the_tabs_of_a_store_from_before_they_were_counted_are_counted_and_bounded(place: Place) -> None:
    with place.open() as store:
        state = StoreState(store, "dashboard")
        for tab, at in (("older", 1), ("newer", 3)):  # messages as written before tabs had keys
            state.set(f"m:{tab}:u-1", json.dumps({"at": at, "role": "user", "text": tab, "plain": False,
                                                  "blocks": [], "buttons": []}))
        kept = SharedTranscript(state, max_tabs=1)
        assert kept.entries("older") == [] and [e.text for e in kept.entries("newer")] == ["newer"]
        assert set(state.items("t:")) == {"t:newer:"}


async def test_a_tab_loads_only_its_own_rows_through_an_index(postgres: PostgresServer) -> None:
    # A database sorting text by a language's rules (ICU), as a production one may: a tab's rows must
    # still be one range of the index, and exactly the tab's.
    name = f"tabload_{os.getpid()}"
    try:
        postgres.psql(f"CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"
                      " LOCALE 'C.UTF-8'")
    except RuntimeError:  # a server built without ICU: its own default collation
        postgres.psql(f"CREATE DATABASE {name}")
    explain = ("-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0"
               " -c auto_explain.log_analyze=on -c auto_explain.log_nested_statements=on")
    place = Place("postgresql", postgres.url(name, options=explain), postgres)
    with place.open() as store:
        transcript = SharedTranscript(StoreState(store, "dashboard"))
        for i in range(5):
            transcript.add(TAB, "user", f"message {i}", message_id=f"u-{i}")
        # Other tabs, some named like this one but for punctuation or case, each with 20 messages.
        others = ", ".join(f"('{tab}')" for tab in ("tab1", "tab_1", "TAB-1", "tab-10", "tab-1-", "ta-b-1"))
        place.sql("INSERT INTO offsets (surface, name, value, updated_at)"
                  " SELECT 'dashboard', 'm:' || t.tab || ':' || n || i, '{\"at\": 1}', 0"
                  f" FROM (VALUES {others}) AS t (tab), generate_series(1, 200) AS i, (VALUES ('a'), ('z')) AS m (n)")
        place.sql("ANALYZE offsets")
        log = postgres.root / "log"
        start = log.stat().st_size
        assert [e.text for e in transcript.entries(TAB)] == [f"message {i}" for i in range(5)]
        logged = log.read_text(errors="replace")[start:]
    plans = [p for p in logged.split("plan:")[1:] if "FROM offsets" in p.split("\n", 2)[1]]
    assert plans, logged
    plan = plans[0]
    assert "Index" in plan and "Seq Scan" not in plan and "Rows Removed" not in plan, plan
    assert "rows=5 loops=1" in plan, plan  # the scan read the tab's 5 rows, none of the other 2400
