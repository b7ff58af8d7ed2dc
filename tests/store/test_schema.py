"""The schema's version table on both backends, the move of a SQLite file made by the previous
acp-relay (``user_version`` 6, no version table) onto it, relays migrating at the same moment, and
the dialect layer's spelling of one portable statement."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from core.store import SCHEMA_VERSION, Store
from core.store.dialect import POSTGRESQL, SQLITE
from tests.store.conftest import Place

#: Made by acp-relay's store before the version table (commit 780edce): schema 6 in user_version, with
#: a conversation, a completed and an unfinished message (a tool ran, one reply message), an offset
#: and an undelivered answer.
LEGACY_V6 = Path(__file__).resolve().parent.parent / "fixtures" / "store" / "relay-v6.db"


def _columns(path: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                                   " AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {table: conn.execute(f"PRAGMA table_info({table})").fetchall() for table in tables}
    finally:
        conn.close()


def test_a_file_made_by_the_previous_store_moves_to_the_version_table_with_everything_in_it(tmp_path: Path) -> None:
    path = tmp_path / "relay.db"
    shutil.copy(LEGACY_V6, path)
    with Store.open(path) as s:
        assert s.schema_version() == SCHEMA_VERSION
        rec = s.get_conversation("telegram:1")
        assert rec is not None
        assert (rec.agent, rec.cwd, rec.session_id, rec.generation, rec.model, rec.session_meta, rec.context_pct) == (
            "kiro", "/w", "sess-1", 2, "claude-sonnet", {"_kiro.dev/session_file": "/s1.json"}, 37.5)
        [unfinished] = s.unfinished_inbound()
        assert (unfinished.message_id, unfinished.payload, unfinished.progress, unfinished.tools) == (
            "101", {"text": "fix the build"}, "tool", (("make fix", "execute"),))
        assert unfinished.reply_started is not None
        assert [r.platform_id for r in s.reply_messages("telegram", "101")] == ["5001"]
        assert not s.record_inbound("telegram", "100", "telegram:1", {})  # the completed one is still known
        assert s.get_offset("telegram", "update_id") == "102"
        assert [(r.conversation_key, r.payload) for r in s.pending_outbound()] == [("telegram:1", {"text": "owed"})]
        assert s.add_outbound("telegram:1", {}) == 2  # the ledger's ids go on
        assert s.leases.acquire("conversation:telegram:1", "relay-a", 30) is not None  # the new table is there
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall() == [
            (v,) for v in range(6, SCHEMA_VERSION + 1)]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # an older relay refuses it
    finally:
        conn.close()


def test_a_migrated_file_has_the_same_tables_as_a_new_one(tmp_path: Path) -> None:
    # The portable migrations, rendered for SQLite, build what the previous store's SQL built.
    shutil.copy(LEGACY_V6, tmp_path / "old.db")
    Store.open(tmp_path / "old.db").close()
    Store.open(tmp_path / "new.db").close()
    assert _columns(tmp_path / "old.db") == _columns(tmp_path / "new.db")


def test_relays_starting_together_migrate_once(place: Place) -> None:
    failures: list[BaseException] = []

    def start() -> None:
        try:
            place.open().close()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    rows = place.sql("SELECT version FROM schema_version ORDER BY version")
    assert [int(str(v)) for (v,) in rows] == list(range(1, SCHEMA_VERSION + 1))


def test_a_statement_is_spelled_for_each_backend() -> None:
    statement = "UPDATE t SET a = ?, b = '?%', c = {json_append(c)}, at = {now} WHERE d LIKE 'x%' AND e = ?"
    assert SQLITE.render(statement) == (
        "UPDATE t SET a = ?, b = '?%', c = json_insert(c, '$[#]', json(?)),"
        " at = ((julianday('now') - 2440587.5) * 86400.0) WHERE d LIKE 'x%' AND e = ?")
    assert POSTGRESQL.render(statement) == (
        "UPDATE t SET a = %s, b = '?%%', c = CAST(CAST(c AS jsonb) || jsonb_build_array(CAST(%s AS jsonb)) AS TEXT),"
        " at = CAST(EXTRACT(EPOCH FROM now()) AS DOUBLE PRECISION) WHERE d LIKE 'x%%' AND e = %s")
    assert POSTGRESQL.render("SELECT '{}'") == "SELECT '{}'"  # JSON's empty object is no word
    with pytest.raises(KeyError):
        SQLITE.render("SELECT {no_such_word}")
