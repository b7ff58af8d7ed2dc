"""Streamed edits of many tabs at once (issue 24): those made in one round of the event loop are written in
one transaction, and each is still shown only once written, in the order made, failing on its own. So are
the relay's new messages (a burst's first answers, all shown in the same round)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import pytest

from core.engine.host import StoreState
from core.engine.surface import DeliveryFailed
from core.store import Store
from surfaces.dashboard.shared import SharedTranscript
from surfaces.dashboard.surface import DashboardSurface, conversation_key
from surfaces.dashboard.transcript import Transcript
from tests.rendering import md

TABS = 20


def _commits(transcript: Transcript) -> list[str]:
    """Every statement the transcript's connection runs from now on (count the commits with ``_count``)."""
    ran: list[str] = []
    transcript._conn.set_trace_callback(lambda sql: ran.append(sql.split()[0].upper()))  # the only way to watch
    return ran


def _count(ran: list[str]) -> int:
    """Commits among ``ran``: each COMMIT, and each write made outside a transaction (a commit of its own)."""
    commits, open_ = 0, False
    for word in ran:
        if word == "BEGIN":
            open_ = True
        elif word in ("COMMIT", "ROLLBACK"):
            commits += word == "COMMIT"
            open_ = False
        elif word in ("INSERT", "UPDATE", "DELETE") and not open_:
            commits += 1
    return commits


@pytest.fixture
def surface(tmp_path: Path) -> DashboardSurface:
    return DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=1000))


async def _answers(surface: DashboardSurface) -> list[str]:
    return [await surface.send(conversation_key(f"tab{i}"), md(surface, f"answer {i}")) for i in range(TABS)]


async def test_the_edits_of_many_tabs_at_once_are_one_commit_and_each_is_shown(
        surface: DashboardSurface, tmp_path: Path) -> None:
    ids = await _answers(surface)
    watching = [surface.subscribe(f"tab{i}") for i in range(TABS)]
    subs = [w.__enter__() for w in watching]
    ran = _commits(surface.transcript)
    await asyncio.gather(*(surface.edit(conversation_key(f"tab{i}"), mid, md(surface, f"answer {i}, grown"))
                           for i, mid in enumerate(ids)))
    assert _count(ran) == 1, f"{_count(ran)} commits for {TABS} edits made at once: {ran}"
    for i, sub in enumerate(subs):
        event = sub.queue.get_nowait()
        assert event is not None and (event["id"], event["text"]) == (ids[i], f"answer {i}, grown")
        assert sub.queue.empty()
    surface.transcript.close()
    reread = Transcript.open(tmp_path / "t.db")  # written, not only shown
    assert [reread.entries(f"tab{i}")[0].text for i in range(TABS)] == [f"answer {i}, grown" for i in range(TABS)]
    reread.close()


@pytest.fixture(params=["file", "shared"])
def either(request: pytest.FixtureRequest, tmp_path: Path) -> DashboardSurface:
    """The transcript of its own file, or the one in the store relays share."""
    if request.param == "file":
        return DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=1000))
    store = Store.open(str(tmp_path / "relay.db"))
    request.addfinalizer(store.close)
    return DashboardSurface(SharedTranscript(StoreState(store, "dashboard"), max_tabs=1000))


async def test_an_edit_of_a_missing_message_fails_alone(either: DashboardSurface) -> None:
    surface = either
    ids = await _answers(surface)
    edits = [surface.edit(conversation_key(f"tab{i}"), mid, md(surface, "grown")) for i, mid in enumerate(ids)]
    edits.insert(3, surface.edit(conversation_key("tab3"), "no-such-message", md(surface, "lost")))
    results = await asyncio.gather(*edits, return_exceptions=True)
    assert isinstance(results[3], DeliveryFailed) and "no-such-message" in str(results[3])
    assert results[:3] + results[4:] == [None] * TABS
    assert [surface.transcript.entries(f"tab{i}")[0].text for i in range(TABS)] == ["grown"] * TABS


async def test_edits_of_one_message_in_one_round_are_written_and_shown_in_the_order_made(
        either: DashboardSurface) -> None:
    surface = either
    mid = await surface.send(conversation_key("tab1"), md(surface, "a"))
    with surface.subscribe("tab1") as sub:
        key = conversation_key("tab1")
        await asyncio.gather(*(surface.edit(key, mid, md(surface, text)) for text in ("ab", "abc")))
        shown = [sub.queue.get_nowait(), sub.queue.get_nowait()]
    assert [e["text"] for e in shown if e is not None] == ["ab", "abc"]
    assert surface.transcript.entries("tab1")[0].text == "abc"


async def test_an_edit_given_up_before_its_round_is_written_is_neither_written_nor_shown(
        surface: DashboardSurface) -> None:
    ids = await _answers(surface)
    with surface.subscribe("tab0") as sub:
        gone = asyncio.create_task(surface.edit(conversation_key("tab0"), ids[0], md(surface, "never")))
        kept = asyncio.create_task(surface.edit(conversation_key("tab1"), ids[1], md(surface, "kept")))
        await asyncio.sleep(0)  # both handed over, the round not written yet
        gone.cancel()
        await kept
        assert sub.queue.empty()
    assert gone.cancelled()
    assert [surface.transcript.entries(f"tab{i}")[0].text for i in (0, 1)] == ["answer 0", "kept"]


async def test_a_round_the_disk_refuses_fails_each_of_its_edits_and_the_next_round_writes(
        surface: DashboardSurface) -> None:
    ids = await _answers(surface)
    conn = surface.transcript._conn  # a disk that fails for one round
    conn.execute("CREATE TEMP TRIGGER fail BEFORE UPDATE ON messages BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    with surface.subscribe("tab0") as sub:
        results = await asyncio.gather(*(surface.edit(conversation_key(f"tab{i}"), mid, md(surface, "lost"))
                                         for i, mid in enumerate(ids)), return_exceptions=True)
        assert all(isinstance(r, DeliveryFailed) and isinstance(r.__cause__, sqlite3.Error) for r in results)
        assert sub.queue.empty(), "nothing is shown that was not written"
        conn.execute("DROP TRIGGER fail")
        await asyncio.gather(*(surface.edit(conversation_key(f"tab{i}"), mid, md(surface, "written"))
                               for i, mid in enumerate(ids)))
        event = sub.queue.get_nowait()
    assert event is not None and event["text"] == "written"
    assert [surface.transcript.entries(f"tab{i}")[0].text for i in range(TABS)] == ["written"] * TABS


async def test_the_first_answers_of_many_tabs_at_once_are_one_commit_and_each_is_shown_once_written(
        surface: DashboardSurface, tmp_path: Path) -> None:
    with contextlib.ExitStack() as watching:
        subs = [watching.enter_context(surface.subscribe(f"tab{i}")) for i in range(TABS)]
        ran = _commits(surface.transcript)
        sending = asyncio.gather(*(surface.send_once(conversation_key(f"tab{i}"), md(surface, f"first words {i}"),
                                                     key=f"tab{i}|m{i}|0|0") for i in range(TABS)))
        await asyncio.sleep(0)  # every send handed over, the round not written yet
        assert all(sub.queue.empty() for sub in subs), "nothing is shown before it is written"
        ids = await sending
        assert _count(ran) == 1, f"{_count(ran)} commits for {TABS} answers begun at once: {ran}"
        for i, sub in enumerate(subs):
            event = sub.queue.get_nowait()
            assert event is not None and (event["id"], event["text"]) == (ids[i], f"first words {i}")
            assert sub.queue.empty()
    assert len(set(ids)) == TABS
    surface.transcript.close()
    reread = Transcript.open(tmp_path / "t.db")  # written, not only shown
    assert [[(e.id, e.text) for e in reread.entries(f"tab{i}")] for i in range(TABS)] == [
        [(ids[i], f"first words {i}")] for i in range(TABS)]
    reread.close()


async def test_a_piece_a_killed_relay_left_is_rewritten_in_its_place_in_a_round_with_new_ones(
        surface: DashboardSurface) -> None:
    key = conversation_key("tab1")
    left = await surface.send_once(key, md(surface, "the answer so f"), key="tab1|m1|0|0")
    with surface.subscribe("tab1") as sub:
        taken, below, other = await asyncio.gather(
            surface.send_once(key, md(surface, "the answer so far"), key="tab1|m1|0|0"),
            surface.send_once(key, md(surface, "its second piece"), key="tab1|m1|0|1"),
            surface.send(conversation_key("tab2"), md(surface, "another tab")))
        shown = [sub.queue.get_nowait(), sub.queue.get_nowait()]
    assert taken == left and below != left
    assert [(e.id, e.text) for e in surface.transcript.entries("tab1")] == [
        (left, "the answer so far"), (below, "its second piece")]
    assert [(e["id"], e["text"]) for e in shown if e] == [(left, "the answer so far"), (below, "its second piece")]
    assert [e.text for e in surface.transcript.entries("tab2")] == ["another tab"] and other


async def test_a_message_given_up_before_its_round_is_written_is_neither_written_nor_shown(
        surface: DashboardSurface) -> None:
    with surface.subscribe("tab0") as sub:
        gone = asyncio.create_task(surface.send(conversation_key("tab0"), md(surface, "never")))
        kept = asyncio.create_task(surface.send(conversation_key("tab1"), md(surface, "kept")))
        await asyncio.sleep(0)  # both handed over, the round not written yet
        gone.cancel()
        await kept
        assert sub.queue.empty()
    assert gone.cancelled()
    assert surface.transcript.entries("tab0") == []
    assert [e.text for e in surface.transcript.entries("tab1")] == ["kept"]


async def test_a_round_of_new_messages_the_disk_refuses_fails_each_and_shows_none(
        surface: DashboardSurface) -> None:
    conn = surface.transcript._conn  # a disk that fails for one round
    conn.execute("CREATE TEMP TRIGGER fail BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    with surface.subscribe("tab0") as sub:
        results = await asyncio.gather(*(surface.send(conversation_key(f"tab{i}"), md(surface, "lost"))
                                         for i in range(TABS)), return_exceptions=True)
        assert all(isinstance(r, DeliveryFailed) and isinstance(r.__cause__, sqlite3.Error) for r in results)
        assert sub.queue.empty(), "nothing is shown that was not written"
        conn.execute("DROP TRIGGER fail")
        await surface.send(conversation_key("tab0"), md(surface, "written"))
        event = sub.queue.get_nowait()
    assert event is not None and event["text"] == "written"
    texts = [[e.text for e in surface.transcript.entries(f"tab{i}")] for i in range(TABS)]
    assert texts == [["written"]] + [[]] * (TABS - 1)
