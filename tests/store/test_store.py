"""The store on both backends (``place``: SQLite in a file, PostgreSQL in a schema of its own),
reopened to simulate restarts; SQLite's own faults (a corrupt or locked file, a path it cannot
create) fail cleanly. PostgreSQL's faults are in test_postgres_faults.py."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from core.store import SCHEMA_VERSION, ConversationRecord, Store, StoreError
from core.store.dialect import SQLITE
from core.store.records import STORE_AWAY, STORE_AWAY_HELD, held_prose
from core.store.sqlite import HELD_WAIT_MS
from tests.full_store import locked
from tests.store.conftest import Place


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "nested" / "relay.db"


def test_open_creates_file_and_parent_dirs(db: Path) -> None:
    assert not db.parent.exists()
    with Store.open(db) as s:
        assert s.path == str(db)
        assert s.backend.kind == "sqlite"
    assert db.is_file()


def test_open_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with Store.open("~/x/relay.db") as s:
        assert s.path == str(tmp_path / "x" / "relay.db")
    assert (tmp_path / "x" / "relay.db").is_file()


def test_wal_mode_is_on(db: Path) -> None:
    Store.open(db).close()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()


def test_conversation_round_trip(store: Store) -> None:
    assert store.get_conversation("telegram:1") is None
    rec = ConversationRecord("telegram:1", "kiro", "/w", "sess-1", 0, "claude-sonnet", 0.0)
    assert store.save_conversation(rec)
    got = store.get_conversation("telegram:1")
    assert got is not None
    assert (got.key, got.agent, got.cwd, got.session_id, got.generation, got.model) == (
        "telegram:1",
        "kiro",
        "/w",
        "sess-1",
        0,
        "claude-sonnet",
    )
    assert got.updated_at > 0
    got.session_id = "sess-2"
    got.session_meta = {"_kiro.dev/session_file": "/s.json"}
    got.context_pct = 41.5
    assert store.save_conversation(got)
    again = store.get_conversation("telegram:1")
    assert again is not None and again.session_id == "sess-2"
    assert (again.session_meta, again.context_pct) == ({"_kiro.dev/session_file": "/s.json"}, 41.5)


def test_times_keep_sub_second_precision(store: Store) -> None:
    # PostgreSQL's REAL is single precision: seconds since 1970 in it are off by a minute and equal
    # for two messages a few milliseconds apart.
    store.record_inbound("telegram", "1", "c", {})
    time.sleep(0.01)
    store.record_inbound("telegram", "2", "c", {})
    first, second = store.unfinished_inbound()
    assert 0 < second.received_at - first.received_at < 1
    assert abs(first.received_at - time.time()) < 1


def test_reset_clears_session_and_increments_generation_durably(place: Place) -> None:
    with place.open() as s:
        s.save_conversation(ConversationRecord("k", "kiro", "/w", "sess-1", model="m"))
        assert s.reset_conversation("k") == 1
    with place.open() as s:
        got = s.get_conversation("k")
        assert got is not None
        assert (got.session_id, got.generation, got.agent, got.cwd, got.model) == (None, 1, "kiro", "/w", "m")
        assert s.reset_conversation("k") == 2
    with place.open() as s:
        got = s.get_conversation("k")
        assert got is not None and got.generation == 2


def test_reset_of_unknown_key_creates_generation_one(store: Store) -> None:
    assert store.reset_conversation("dashboard:tab") == 1
    got = store.get_conversation("dashboard:tab")
    assert got is not None
    assert (got.agent, got.cwd, got.session_id, got.generation, got.session_meta) == ("", "", None, 1, {})


def test_save_from_an_older_generation_is_ignored(store: Store) -> None:
    store.save_conversation(ConversationRecord("k", "kiro", "/w", "old-session", generation=0))
    store.reset_conversation("k")
    # A turn that started before the reset finishes and saves its stale view.
    assert not store.save_conversation(ConversationRecord("k", "kiro", "/w", "old-session", generation=0))
    got = store.get_conversation("k")
    assert got is not None and (got.session_id, got.generation) == (None, 1)
    assert store.save_conversation(ConversationRecord("k", "kiro", "/w", "new-session", generation=1))


def test_duplicate_inbound_rejected_across_reopen(place: Place) -> None:
    with place.open() as s:
        assert s.record_inbound("telegram", "42", "telegram:1", {"text": "hi"})
        assert not s.record_inbound("telegram", "42", "telegram:1", {"text": "hi"})
        assert s.record_inbound("discord", "42", "discord:9", {"text": "same id, other surface"})
    with place.open() as s:  # the relay restarted; the platform redelivers
        assert not s.record_inbound("telegram", "42", "telegram:1", {"text": "hi"})
        s.complete_inbound("telegram", "42")
        assert not s.record_inbound("telegram", "42", "telegram:1", {"text": "hi"})


def test_unfinished_inbound_survives_reopen_in_arrival_order(place: Place) -> None:
    with place.open() as s:
        for i in range(5):
            s.record_inbound("slack", f"m{i}", "slack:T:C:1.0", {"text": f"msg {i}", "n": [i]})
        s.complete_inbound("slack", "m1")
        s.complete_inbound("slack", "m3")
    with place.open() as s:
        pending = s.unfinished_inbound()
        assert [r.message_id for r in pending] == ["m0", "m2", "m4"]
        assert pending[1].payload == {"text": "msg 2", "n": [2]}
        assert pending[1].conversation_key == "slack:T:C:1.0" and pending[1].surface == "slack"
        assert pending[0].seq < pending[1].seq < pending[2].seq

def test_an_edited_message_is_rewritten_only_while_unfinished_and_an_edit_is_never_replayed(place: Place) -> None:
    with place.open() as s:
        s.record_inbound("telegram", "1:5", "telegram:1", {"text": "fix foo.py", "user_id": "7"})
        assert s.record_inbound("telegram", "1:5:edit:1", "telegram:1", {"edits": "1:5"}, completed=True)
        assert not s.record_inbound("telegram", "1:5:edit:1", "telegram:1", {"edits": "1:5"}, completed=True)
        assert s.rewrite_inbound("telegram", "1:5", {"text": "fix bar.py", "user_id": "7"})
        s.reject_inbound("telegram", "update:9", "unreadable")
    with place.open() as s:
        assert [(r.message_id, r.payload) for r in s.unfinished_inbound()] == [
            ("1:5", {"text": "fix bar.py", "user_id": "7"})], "the edit itself is never answered"
        taken = s.taken_inbound("telegram", "1:5")
        assert taken is not None and (taken.conversation_key, taken.payload) == (
            "telegram:1", {"text": "fix bar.py", "user_id": "7"})
        assert s.taken_inbound("telegram", "update:9") is None, "a rejected update was never taken in"
        assert s.taken_inbound("telegram", "1:6") is None
        s.complete_inbound("telegram", "1:5")
        assert not s.rewrite_inbound("telegram", "1:5", {"text": "too late"})
        done = s.taken_inbound("telegram", "1:5")
        assert done is not None and done.payload == {"text": "fix bar.py", "user_id": "7"}
        s.record_inbound("telegram", "1:6", "telegram:1", {"text": "my token is hunter2", "user_id": "7"})
        s.forget_inbound("telegram", "1:6", {"user_id": "7", "forgotten": True})
        s.forget_inbound("telegram", "1:5", {"user_id": "7", "forgotten": True})  # answered already: words go too
        assert s.unfinished_inbound() == [], "a message deleted is never answered"
        assert not s.record_inbound("telegram", "1:6", "telegram:1", {"text": "again"}), "its redelivery is known"
    assert "hunter2" not in str(place.sql("SELECT payload FROM inbound"))



def test_a_rejected_update_is_never_replayed_and_its_redelivery_is_known(store: Store) -> None:
    store.reject_inbound("telegram", "9", "unreadable update")
    store.record_inbound("telegram", "10", "telegram:1", {"text": "hi"})
    store.reject_inbound("telegram", "10", "no place for it")
    assert store.unfinished_inbound() == []
    assert not store.record_inbound("telegram", "9", "telegram:1", {"text": "again"})
    store.set_inbound_progress("telegram", "10", "tool")  # a late note does not bring it back
    assert store.unfinished_inbound() == []


def test_prune_removes_only_old_completed_rows(store: Store) -> None:
    store.record_inbound("telegram", "1", "c", {})
    store.record_inbound("telegram", "2", "c", {})
    store.complete_inbound("telegram", "1")
    assert store.prune_inbound(3600) == 0  # completed just now: kept
    assert store.prune_inbound(-1) == 1  # everything completed counts as old
    assert [r.message_id for r in store.unfinished_inbound()] == ["2"]
    assert store.record_inbound("telegram", "1", "c", {})  # pruned ids are no longer de-duplicated


def test_offsets_round_trip_and_survive_reopen(place: Place) -> None:
    with place.open() as s:
        assert s.get_offset("telegram", "update_id") is None
        s.set_offset("telegram", "update_id", "100")
        s.set_offset("telegram", "update_id", "101")
        s.set_offset("discord", "update_id", "x")
    with place.open() as s:
        assert s.get_offset("telegram", "update_id") == "101"
        assert s.get_offset("discord", "update_id") == "x"


def test_offsets_lists_one_surfaces_positions_by_name(place: Place) -> None:
    with place.open() as s:
        assert s.offsets("discord") == {}
        s.set_offset("discord", "channel:2", "b")
        s.set_offset("discord", "channel:1", "a")
        s.set_offset("discord", "channel:1", "a2")
        s.set_offset("discord", "thread:1", "t")
        s.set_offset("telegram", "update_id", "7")
    with place.open() as s:
        assert s.offsets("discord") == {"channel:1": "a2", "channel:2": "b", "thread:1": "t"}
        assert s.offsets("discord", "channel:") == {"channel:1": "a2", "channel:2": "b"}
        assert s.offsets("telegram") == {"update_id": "7"}
        assert s.offsets("slack") == {}


def test_prune_offsets_forgets_only_the_old_rows_under_the_prefix(store: Store) -> None:
    store.set_offset("slack", "thread:1", "a")
    store.set_offset("slack", "thread:2", "b")
    store.set_offset("slack", "cursor", "c")
    assert store.prune_offsets("slack", 3600, "thread:") == 0  # written just now
    assert store.prune_offsets("slack", -1, "thread:") == 2
    assert store.offsets("slack") == {"cursor": "c"}


def test_delete_offsets_forgets_exactly_the_names_given(store: Store) -> None:
    for name in ("album:1:g:10", "album:1:g:11", "album:1:g:12"):
        store.set_offset("telegram", name, "{}")
    store.set_offset("slack", "album:1:g:10", "theirs")
    store.delete_offsets("telegram", ["album:1:g:10", "album:1:g:12", "album:1:g:99"])  # (99 was never there)
    assert store.offsets("telegram") == {"album:1:g:11": "{}"}
    assert store.offsets("slack") == {"album:1:g:10": "theirs"}, "another surface's rows are its own"


def test_a_prefix_lists_exactly_the_names_starting_with_it_whatever_their_characters(store: Store) -> None:
    # Names compare byte by byte on both backends (a prefix is a range of the primary key): the ones just
    # after a prefix's range (";" after ":", the first character past the surrogates, one more letter)
    # are not in it, and a prefix ending in the last code point has no range end.
    names = ["m:t:", "m:t:1", "m:t;", "m:T:1", "m:t-:1", "m:t", "a\ud7ff", "a\ud7ffb", "a\ue000",
             "z\U0010ffff", "z\U0010ffffa", "z"]
    for name in names:
        store.set_offset("dashboard", name, "v")
    assert list(store.offsets("dashboard", "m:t:")) == ["m:t:", "m:t:1"]
    assert list(store.offsets("dashboard", "a\ud7ff")) == ["a\ud7ff", "a\ud7ffb"]
    assert list(store.offsets("dashboard", "z\U0010ffff")) == ["z\U0010ffff", "z\U0010ffffa"]
    assert list(store.offsets("dashboard", "\U0010ffff")) == []
    assert list(store.offsets("dashboard")) == sorted(names, key=lambda n: n.encode())
    assert store.prune_offsets("dashboard", -1, "m:t:") == 2
    assert "m:t;" in store.offsets("dashboard", "m:")


def test_outbound_ledger_keeps_unacked_in_order_across_reopen(place: Place) -> None:
    with place.open() as s:
        a = s.add_outbound("telegram:1", {"text": "a"})
        b = s.add_outbound("telegram:1", {"text": "b"})
        c = s.add_outbound("discord:2", {"text": "c"})
        assert a < b < c
        s.ack_outbound(b)
        s.ack_outbound(9999)  # unknown ids are ignored
    with place.open() as s:
        pending = s.pending_outbound()
        assert [(r.id, r.conversation_key, r.payload) for r in pending] == [
            (a, "telegram:1", {"text": "a"}),
            (c, "discord:2", {"text": "c"}),
        ]
        assert s.add_outbound("telegram:1", {"text": "d"}) > c  # ids are never reused


def test_a_transaction_commits_every_write_or_none(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.record_inbound("telegram", "1", "c", {})
        store.set_offset("telegram", "update_id", "2")
        raise RuntimeError("the relay failed in between")
    assert store.unfinished_inbound() == [] and store.get_offset("telegram", "update_id") is None
    with store.transaction():
        store.record_inbound("telegram", "1", "c", {})
        store.set_offset("telegram", "update_id", "2")
    assert [r.message_id for r in store.unfinished_inbound()] == ["1"]
    assert store.get_offset("telegram", "update_id") == "2"


def test_a_failed_statement_rolls_its_transaction_back_and_the_store_goes_on(store: Store, place: Place) -> None:
    place.sql("CREATE TABLE side (x INTEGER NOT NULL)")
    with pytest.raises(StoreError), store.transaction():
        store.set_offset("telegram", "update_id", "2")
        store.backend.execute("INSERT INTO side (x) VALUES (NULL)")
    assert store.get_offset("telegram", "update_id") is None
    store.set_offset("telegram", "update_id", "3")
    assert store.get_offset("telegram", "update_id") == "3"


def test_reopen_does_not_rerun_migrations(place: Place) -> None:
    with place.open() as s:
        s.set_offset("a", "b", "c")
        assert s.schema_version() == SCHEMA_VERSION
    with place.open() as s:
        assert s.get_offset("a", "b") == "c"
    rows = place.sql("SELECT version FROM schema_version ORDER BY version")
    assert [int(str(v)) for (v,) in rows] == list(range(1, SCHEMA_VERSION + 1))


def test_newer_schema_is_refused(place: Place) -> None:
    place.open().close()
    place.sql(f"INSERT INTO schema_version (version, applied_at) VALUES ({SCHEMA_VERSION + 1}, 0)")
    with pytest.raises(StoreError, match="newer") as info:
        place.open()
    assert not info.value.transient
    if place.kind == "sqlite":
        assert info.value.path == place.location


def test_a_sqlite_file_whose_user_version_is_newer_is_refused(db: Path) -> None:
    Store.open(db).close()
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer") as info:
        Store.open(db)
    assert info.value.path == str(db)


def test_corrupt_file_raises_store_error_naming_the_path(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_bytes(os.urandom(8192))
    with pytest.raises(StoreError) as info:
        Store.open(db)
    err = info.value
    assert err.path == str(db)
    assert str(db) in str(err)
    assert "not a usable SQLite database" in err.detail
    assert isinstance(err.__cause__, sqlite3.DatabaseError)


def test_file_locked_by_an_exclusive_transaction_raises_store_error(db: Path) -> None:
    db.parent.mkdir(parents=True)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO t VALUES (1)")
    try:
        with pytest.raises(StoreError, match="locked") as info:
            Store.open(db, busy_timeout_s=0.05)
        assert info.value.path == str(db)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Store.open(db, busy_timeout_s=0.05):  # usable once the holder lets go
        pass


def test_write_blocked_by_another_writer_raises_a_transient_store_error(db: Path) -> None:
    """Another writer lets go in time, as a PostgreSQL row lock does: worth trying again, and said so."""
    with Store.open(db, busy_timeout_s=0.05) as s:
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(StoreError, match="locked") as info:
                s.set_offset("telegram", "update_id", "1")
            assert info.value.transient and not info.value.full
            assert info.value.prose == STORE_AWAY and held_prose(info.value) == STORE_AWAY_HELD
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        s.set_offset("telegram", "update_id", "1")
        assert s.get_offset("telegram", "update_id") == "1"


def test_directory_in_place_of_the_file_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "relay.db"
    path.mkdir()
    with pytest.raises(StoreError) as info:
        Store.open(path)
    assert info.value.path == str(path)


def test_parent_that_is_a_file_raises_store_error(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("x")
    with pytest.raises(StoreError) as info:
        Store.open(tmp_path / "blocker" / "relay.db")
    assert "blocker" in str(info.value)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_directory_nobody_may_create_files_in_raises_store_error() -> None:
    # /proc exists, yet the kernel lets nobody create a file there, root included (CI runs as
    # root, who could write in a chmod 0o500 directory): sqlite cannot open the database.
    path = f"/proc/acp-relay-test-{os.getpid()}.db"
    with pytest.raises(StoreError) as info:
        Store.open(path)
    assert info.value.path == path
    assert "check the path and its permissions" in info.value.detail


def test_closed_store_raises_store_error(place: Place) -> None:
    s = place.open()
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        s.get_offset("a", "b")
    with pytest.raises(StoreError, match="closed"):
        s.set_offset("a", "b", "c")


def test_in_memory_store_works() -> None:
    with Store.open(":memory:") as s:
        assert s.record_inbound("dashboard", "1", "dashboard:t", {})
        assert not s.record_inbound("dashboard", "1", "dashboard:t", {})


def test_migration_from_version_1_keeps_conversations_and_adds_session_meta(tmp_path: Path) -> None:
    from core.store import MIGRATIONS

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(SQLITE.render(statement))
    conn.execute("INSERT INTO conversations VALUES ('k', 'kiro', '/w', 's1', 3, 'm', 1.0)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        rec = store.get_conversation("k")
        assert rec is not None
        assert (rec.agent, rec.session_id, rec.generation, rec.session_meta) == ("kiro", "s1", 3, {})
        rec.session_meta = {"_kiro.dev/session_file": "/home/u/.kiro/sessions/s1.json"}
        assert store.save_conversation(rec)
    with Store.open(path) as store:
        again = store.get_conversation("k")
        assert again is not None and again.session_meta == {"_kiro.dev/session_file": "/home/u/.kiro/sessions/s1.json"}
        assert store.reset_conversation("k") == 4
        reset = store.get_conversation("k")
        assert reset is not None and reset.session_meta == {} and reset.session_id is None


def test_migration_to_version_7_keeps_conversations_and_stores_the_chats_choices(tmp_path: Path) -> None:
    """A store from before the conversation controls: its conversations keep everything, and gain a
    project, modes, a title and costs; a reset keeps the choices and the cost, not the title."""
    from core.store import MIGRATIONS

    path = tmp_path / "v6.db"
    conn = sqlite3.connect(path)
    for migration in MIGRATIONS[:6]:
        for statement in migration:
            conn.execute(SQLITE.render(statement))
    conn.execute("INSERT INTO conversations (key, agent, cwd, session_id, generation, model, updated_at)"
                 " VALUES ('k', 'kiro', '/w', 's1', 2, 'm', 1.0)")
    conn.execute("PRAGMA user_version = 6")
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        rec = store.get_conversation("k")
        assert rec is not None
        assert (rec.agent, rec.session_id, rec.model, rec.project, rec.mode, rec.title, rec.costs) == (
            "kiro", "s1", "m", "", None, "", {})
        rec.project, rec.mode, rec.title = "app", "plan\neffort=high", "Fix the bug"
        rec.costs = {"s1": {"amount": 0.5, "currency": "USD"}}
        assert store.save_conversation(rec)
    with Store.open(path) as store:
        again = store.get_conversation("k")
        assert again is not None and (again.project, again.mode, again.title) == ("app", "plan\neffort=high",
                                                                                  "Fix the bug")
        assert again.costs == {"s1": {"amount": 0.5, "currency": "USD"}}
        store.reset_conversation("k")
        reset = store.get_conversation("k")
        assert reset is not None and (reset.project, reset.mode, reset.title) == ("app", "plan\neffort=high", "")
        assert reset.costs == again.costs and reset.session_id is None


def test_a_file_held_past_the_busy_timeout_costs_that_wait_once_until_a_write_is_taken(db: Path) -> None:
    """Each write waits on the event loop: once another writer held the file past the whole timeout, the
    writes after it wait a moment each (the relay goes on meanwhile); a write taken again restores it."""
    def waits(s: Store) -> int:
        return int(s.backend.execute("PRAGMA busy_timeout").rows[0][0])

    with Store.open(db, busy_timeout_s=0.5) as s:
        assert waits(s) == 500
        with locked(db):
            for value in ("1", "2", "3"):
                with pytest.raises(StoreError, match="locked"):
                    s.set_offset("telegram", "update_id", value)
                assert waits(s) == HELD_WAIT_MS
            assert s.get_offset("telegram", "update_id") is None  # a read does not end it
            assert waits(s) == HELD_WAIT_MS
        s.set_offset("telegram", "update_id", "4")
        assert waits(s) == 500 and s.get_offset("telegram", "update_id") == "4"
        with locked(db), pytest.raises(StoreError, match="locked"):
            s.set_offset("telegram", "update_id", "5")
        assert waits(s) == HELD_WAIT_MS
        with s.transaction():  # a transaction begun holds the write lock: taken too
            pass
        assert waits(s) == 500
