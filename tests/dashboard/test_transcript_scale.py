"""The transcript's work for a new tab does not grow with the tabs it holds (issue 24): finding the
tab used least recently read every message of every tab, grouped, for each new tab. Work is counted
as SQLite's virtual-machine steps (its progress handler), never timed."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from core.surface_api import Text
from surfaces.dashboard.surface import DashboardSurface, conversation_key
from surfaces.dashboard.transcript import Transcript


def _steps_per_new_tab_added(transcript: Transcript, count: int = 20) -> float:
    """Hundreds of SQLite steps per new tab, ``count`` of them added."""
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0  # go on

    conn: sqlite3.Connection = transcript._conn  # the only way to watch the statements it runs
    conn.set_progress_handler(step, 100)
    for i in range(count):
        transcript.add(f"new{i}", "user", "a new tab")
    conn.set_progress_handler(None, 0)
    return steps / count


def _steps_per_new_tab(path: Path, tabs: int) -> float:
    transcript = Transcript.open(path, max_tabs=tabs)
    for i in range(tabs):  # a full file: every new tab now evicts one
        transcript.add(f"tab{i}", "user", f"hello {i}")
        transcript.add(f"tab{i}", "agent", f"answer {i}")
    steps = _steps_per_new_tab_added(transcript)
    transcript.close()
    return steps


def test_a_new_tab_costs_the_same_among_many_tabs_as_among_few(tmp_path: Path) -> None:
    few = _steps_per_new_tab(tmp_path / "few.db", 50)
    many = _steps_per_new_tab(tmp_path / "many.db", 2000)
    assert many <= 2 * few + 5, f"{many:.0f} hundred steps per new tab among 2,000 tabs, {few:.0f} among 50"


def test_the_tab_used_least_recently_goes_and_its_files_with_it(tmp_path: Path) -> None:
    transcript = Transcript.open(tmp_path / "t.db", max_tabs=2)
    transcript.add("a", "user", "first")
    transcript.add_file("a", "rest.txt", b"the rest")
    transcript.add("b", "user", "second")
    transcript.add("c", "user", "third")
    assert transcript.entries("a") == [] and [e.text for e in transcript.entries("c")] == ["third"]
    assert transcript._conn.execute("SELECT COUNT(*) FROM files").fetchone() == (0,)
    transcript.close()


def test_a_file_from_before_the_tabs_table_keeps_its_order_of_use(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, tab TEXT NOT NULL,"
                 " id TEXT NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL, buttons TEXT NOT NULL DEFAULT '[]',"
                 " plain INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL, UNIQUE (tab, id))")
    for n, (tab, at) in enumerate([("old", 1.0), ("newer", 3.0), ("older", 0.5), ("old", 2.0)]):
        conn.execute("INSERT INTO messages (tab, id, role, text, updated_at) VALUES (?, ?, 'user', 'x', ?)",
                     (tab, f"m{n}", at))
    conn.commit()
    conn.close()
    transcript = Transcript.open(path, max_tabs=2)  # opened with a lower bound: the least recent goes
    assert transcript.entries("older") == []
    assert len(transcript.entries("old")) == 2 and len(transcript.entries("newer")) == 1
    transcript.add("another", "user", "y")
    assert transcript.entries("old") == [] and transcript.entries("newer")
    transcript.close()


async def test_a_tab_whose_answer_runs_keeps_its_transcript_past_max_tabs(tmp_path: Path) -> None:
    # Issue 24: with more tabs answering at once than max_tabs, each new tab evicted one still answering,
    # whose next edit then failed (the answer came late, through the relay's resend).
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=2))
    await surface.post_user("a", "first", "m1")
    await surface.typing(conversation_key("a"), True)  # its answer runs
    for tab, text in (("b", "second"), ("c", "third")):
        await _answered(surface, tab, text)
    assert surface.snapshot("b")["messages"], "a tab answering does not count toward max_tabs"
    await _answered(surface, "d", "fourth")
    assert [m["text"] for m in surface.snapshot("a")["messages"]] == ["first"], "kept while it answers"
    assert surface.snapshot("b")["messages"] == [], "the least recent tab not answering went instead"
    await surface.typing(conversation_key("a"), False)
    assert surface.snapshot("a")["messages"] == [], "once its answer ended, it goes like any other"
    assert surface.snapshot("c")["messages"] and surface.snapshot("d")["messages"]
    surface.transcript.close()


async def test_the_working_indicator_keeps_nothing_per_tab_once_off(tmp_path: Path) -> None:
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db"))
    for i in range(500):
        await surface.typing(conversation_key(f"tab{i}"), True)
        await surface.typing(conversation_key(f"tab{i}"), False)
    assert not surface._typing, "one entry per tab ever seen, before"  # the map itself: its size is the bug
    assert surface.snapshot("tab1")["typing"] is False
    surface.transcript.close()


async def _answered(surface: DashboardSurface, tab: str, text: str) -> None:
    """The person's message in ``tab``, and its answer's start and end."""
    await surface.post_user(tab, text, f"m-{text}")
    await surface.typing(conversation_key(tab), True)
    await surface.typing(conversation_key(tab), False)


def _statements(transcript: Transcript) -> list[str]:
    """Every statement the transcript's connection runs from now on, by its first word."""
    ran: list[str] = []
    transcript._conn.set_trace_callback(lambda sql: ran.append(sql.split()[0].upper()))
    return ran


async def test_a_turn_starting_and_ending_writes_nothing_to_the_file(tmp_path: Path) -> None:
    # Issue 24: the "answering" mark of a tab was written to SQLite twice a turn (a transaction each);
    # it lives as long as the process (a new run answers nothing), so it is kept in memory.
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=2))
    await surface.post_user("a", "first", "m1")
    ran = _statements(surface.transcript)
    await surface.typing(conversation_key("a"), True)
    await surface.typing(conversation_key("a"), False)
    assert not {"BEGIN", "COMMIT", "INSERT", "UPDATE", "DELETE"} & set(ran), ran
    surface.transcript.close()


def test_a_message_of_a_kept_tab_and_an_edit_take_one_write_each(tmp_path: Path) -> None:
    # Issue 24: a message of a tab already kept also read and rewrote the tab's row; an edit read its
    # row again after writing it.
    transcript = Transcript.open(tmp_path / "t.db", max_tabs=2)
    first = transcript.add("a", "user", "first")
    assert first is not None
    ran = _statements(transcript)
    transcript.add("a", "agent", "second")
    assert ran == ["INSERT"], ran  # nor its row looked up again, nor a transaction around one statement
    ran.clear()
    edited = transcript.update("a", first.id, "first, edited")
    assert ran == ["UPDATE"] and edited is not None and edited.role == "user"
    transcript.close()


def _steps_to_evict_among_answering(path: Path, answering: int) -> float:
    transcript = Transcript.open(path, max_tabs=2)
    for i in range(answering):  # used before the quiet tabs: first in the order of use
        transcript.add(f"busy{i}", "user", "a long question")
        transcript.answering(f"busy{i}", True)
    transcript.add("quiet0", "user", "x")
    transcript.add("quiet1", "user", "y")
    transcript.add("first", "user", "z")  # the first eviction writes the marks of every answer started
    steps = _steps_per_new_tab_added(transcript)  # each evicts the least recent quiet tab, never one answering
    assert all(transcript.entries(f"busy{i}") for i in range(answering))
    assert [bool(transcript.entries(f"new{i}")) for i in (17, 18, 19)] == [False, True, True]
    transcript.close()
    return steps


def test_evicting_passes_over_the_tabs_answering_without_reading_them(tmp_path: Path) -> None:
    few = _steps_to_evict_among_answering(tmp_path / "few.db", 5)
    many = _steps_to_evict_among_answering(tmp_path / "many.db", 2000)
    assert many <= 2 * few + 5, f"{many:.0f} hundred steps per eviction among 2,000 tabs answering, {few:.0f} among 5"


async def test_a_failed_eviction_leaves_no_tab_answering_unprotected(tmp_path: Path) -> None:
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=1))
    await surface.post_user("a", "first", "m1")
    await surface.typing(conversation_key("a"), True)
    await _answered(surface, "b", "second")
    await surface.post_user("c", "third", "m3")
    await surface.typing(conversation_key("c"), True)
    conn = surface.transcript._conn  # a disk that fails once, mid-eviction
    conn.execute("CREATE TEMP TRIGGER fail BEFORE DELETE ON messages BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    with pytest.raises(sqlite3.IntegrityError):
        await surface.typing(conversation_key("c"), False)  # its answer ended: b goes, c counts
    conn.execute("DROP TRIGGER fail")
    await surface.typing(conversation_key("d"), True)  # answers start and end while the marks are unsure
    await surface.typing(conversation_key("d"), False)
    await _answered(surface, "e", "fifth")
    assert [m["text"] for m in surface.snapshot("a")["messages"]] == ["first"], "kept while it answers"
    assert surface.snapshot("b")["messages"] == [] and surface.snapshot("e")["messages"]
    surface.transcript.close()


async def test_answers_starting_and_ending_in_many_tabs_hold_little_in_memory(tmp_path: Path) -> None:
    for max_tabs in (None, 10_000):  # never evicting: the marks held are written all the same
        surface = DashboardSurface(Transcript.open(tmp_path / f"t{max_tabs}.db", max_tabs=max_tabs))
        for i in range(1000):
            await surface.post_user(f"tab{i}", "hello", f"m{i}")
            await surface.typing(conversation_key(f"tab{i}"), True)
            await surface.typing(conversation_key(f"tab{i}"), False)
        held = surface.transcript._marks  # its size is what grew with every tab ever answered
        assert held is not None and len(held) < 300, f"{len(held)} marks held after 1,000 tabs answered"
        surface.transcript.close()


async def test_messages_posted_in_many_tabs_at_once_are_written_in_one_transaction(tmp_path: Path) -> None:
    # Issue 24: each message a person posted was a transaction of its own (a commit: about 60 us), so a
    # burst of tabs writing at once paid one commit each before any of them was journaled and answered.
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=3))
    surface.transcript.add("old", "user", "a tab from before")
    ran = _statements(surface.transcript)
    with surface.subscribe("t1") as watching:
        posted = await asyncio.gather(*(surface.post_user(f"t{i}", f"hello {i}", f"m{i}") for i in range(5)))
        assert [entry.text for entry in posted if entry is not None] == [f"hello {i}" for i in range(5)]
        assert ran.count("BEGIN") == 1 and ran.count("COMMIT") == 1, ran
        assert watching.queue.get_nowait()["text"] == "hello 1", "shown once written"
    assert [e.text for e in surface.transcript.entries("t4")] == ["hello 4"]
    assert surface.transcript.entries("old"), "no tab goes while their messages wait for their answers"
    for i in range(5):
        await surface.typing(conversation_key(f"t{i}"), True)
        await surface.typing(conversation_key(f"t{i}"), False)
    assert surface.transcript.entries("old") == [] and surface.transcript.entries("t1") == [], \
        "past max_tabs the least recent tabs go, as one message at a time made them go"
    assert [e.text for e in surface.transcript.entries("t2")] == ["hello 2"]
    again = await asyncio.gather(surface.post_user("t4", "hello 4", "m4"), surface.post_user("t4", "more", "m5"))
    assert again[0] is None and again[1] is not None, "a resend is told apart, in a batch too"
    surface.transcript.close()


async def test_a_batch_of_messages_that_cannot_be_written_fails_each_and_shows_none(tmp_path: Path) -> None:
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db"))
    surface.transcript._conn.execute("DROP TABLE tabs")  # every write of a message fails now
    with surface.subscribe("t0") as watching:
        failed = await asyncio.gather(*(surface.post_user(f"t{i}", "hello", f"m{i}") for i in range(3)),
                                      return_exceptions=True)
        assert all(isinstance(each, sqlite3.Error) for each in failed), failed
        assert watching.queue.empty()
    assert surface.transcript._conn.execute("SELECT COUNT(*) FROM messages").fetchone() == (0,)
    surface.transcript.close()


async def test_an_answers_first_words_in_a_kept_tab_take_one_statement(tmp_path: Path) -> None:
    # Issue 24: the first words of every answer in a burst ran four statements (BEGIN, the message, the
    # tab's row looked up again, COMMIT) and the turn's start and end looked the tab's row up once each.
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=2))
    await surface.post_user("a", "first", "m1")
    ran = _statements(surface.transcript)
    await surface.typing(conversation_key("a"), True)
    await surface.send(conversation_key("a"), surface.formatter.render((Text("an answer"),)))
    await surface.typing(conversation_key("a"), False)
    assert ran == ["INSERT"], ran
    assert [m["text"] for m in surface.snapshot("a")["messages"]] == ["first", "an answer"]
    surface.transcript.close()


def test_a_tab_whose_row_was_rolled_back_counts_again_when_it_is_used(tmp_path: Path) -> None:
    # The tabs the index holds are remembered: a new tab's row undone with its transaction must not be.
    transcript = Transcript.open(tmp_path / "t.db", max_tabs=1)
    transcript.add("a", "user", "first")
    conn = transcript._conn  # a disk that fails once, while "b" evicts "a"
    conn.execute("CREATE TEMP TRIGGER fail BEFORE DELETE ON messages BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    with pytest.raises(sqlite3.IntegrityError):
        transcript.add("b", "user", "second")
    conn.execute("DROP TRIGGER fail")
    transcript.add("b", "user", "second, again")
    assert transcript.entries("a") == [], "b is a new tab again: past max_tabs, a goes"
    assert [e.text for e in transcript.entries("b")] == ["second, again"]
    transcript.add("a", "user", "a new first")  # a's row went: a new tab again too
    assert transcript.entries("b") == [] and [e.text for e in transcript.entries("a")] == ["a new first"]
    transcript.close()


async def test_a_message_waiting_for_its_answer_is_kept_past_max_tabs(tmp_path: Path) -> None:
    # Issue 24: in a burst of more tabs than max_tabs, each new tab's message evicted the least recent
    # tab, one whose message still waited for its turn: its answer then showed without the question.
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=2))
    for tab in "abc":
        await surface.post_user(tab, f"question {tab}", f"m{tab}")
    for tab in "abc":
        await surface.typing(conversation_key(tab), True)
        await surface.send(conversation_key(tab), surface.formatter.render((Text(f"answer {tab}"),)))
    for tab in "abc":
        assert [m["text"] for m in surface.snapshot(tab)["messages"]] == [f"question {tab}", f"answer {tab}"]
    for tab in "abc":
        await surface.typing(conversation_key(tab), False)
    assert surface.snapshot("a")["messages"] == [], "once the answers ended, the least recent tab goes"
    assert surface.snapshot("b")["messages"] and surface.snapshot("c")["messages"]
    surface.transcript.close()


async def test_a_reply_without_a_turn_or_a_resend_leaves_no_tab_waiting(tmp_path: Path) -> None:
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=1))
    await surface.post_user("a", "/help", "m1")
    await surface.send(conversation_key("a"), surface.formatter.render((Text("a command's answer"),)))
    await surface.post_user("b", "hello", "m2")
    await surface.typing(conversation_key("b"), True)
    await surface.typing(conversation_key("b"), False)
    assert surface.snapshot("a")["messages"] == [], "answered without a turn: it waits no more, and goes"
    assert await surface.post_user("b", "hello", "m2") is None  # a resend: nothing new waits
    await surface.post_user("c", "hi", "m3")
    await surface.typing(conversation_key("c"), True)
    await surface.typing(conversation_key("c"), False)
    assert surface.snapshot("b")["messages"] == [] and surface.snapshot("c")["messages"]
    surface.transcript.close()


async def test_messages_that_could_not_be_written_leave_no_tab_waiting(tmp_path: Path) -> None:
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=1))
    await surface.post_user("a", "first", "m1")
    await surface.typing(conversation_key("a"), True)
    await surface.typing(conversation_key("a"), False)
    conn = surface.transcript._conn  # a disk that fails once, while "b" evicts "a"
    conn.execute("CREATE TEMP TRIGGER fail BEFORE DELETE ON messages BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    conn.execute("CREATE TEMP TRIGGER fail_b BEFORE INSERT ON messages WHEN NEW.tab = 'b'"
                 " BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    with pytest.raises(sqlite3.IntegrityError):
        await asyncio.gather(surface.post_user("c", "third", "m3"), surface.post_user("b", "second", "m2"))
    conn.execute("DROP TRIGGER fail")
    conn.execute("DROP TRIGGER fail_b")
    await _answered(surface, "d", "fourth")  # evicts "a", the least recent tab
    assert surface.snapshot("a")["messages"] == [] and surface.snapshot("d")["messages"]
    assert not surface.transcript._answering, "a failed post left a tab answering forever"
    surface.transcript.close()
