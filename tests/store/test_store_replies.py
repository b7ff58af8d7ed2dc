"""The store's memory of an unfinished answer: which platform messages show it, and which tools ran.

A relay killed mid-answer leaves these behind, so the next one continues the answer in the same
messages and never sends a message whose tools already ran without asking. Both backends, reopened
to simulate the restart.
"""

from __future__ import annotations

import sqlite3
from contextlib import nullcontext
from pathlib import Path

from core.store import MIGRATIONS, ReplyMessageRecord, Store
from core.store.dialect import SQLITE
from tests.store.conftest import Place


def test_reply_messages_survive_a_restart_in_order_and_mark_the_reply_started(place: Place) -> None:
    with place.open() as s:
        s.record_inbound("telegram", "7", "telegram:1", {"text": "hi"})
        [fresh] = s.unfinished_inbound()
        assert fresh.reply_started is None
        s.record_reply_message("telegram", "7", 1, 0, "301", "message")
        s.record_reply_message("telegram", "7", 0, 1, "201", "message")
        s.record_reply_message("telegram", "7", 0, 0, "200", "message")
        s.record_reply_message("telegram", "7", 0, 2, "d-9", "stream")
    with place.open() as s:
        [started] = s.unfinished_inbound()
        assert started.reply_started is not None
        assert s.reply_messages("telegram", "7") == [
            ReplyMessageRecord(0, 0, "200", "message"), ReplyMessageRecord(0, 1, "201", "message"),
            ReplyMessageRecord(0, 2, "d-9", "stream"), ReplyMessageRecord(1, 0, "301", "message")]


def test_a_piece_recorded_again_replaces_it_and_a_forgotten_one_is_gone(store: Store) -> None:
    with nullcontext(store) as s:
        s.record_inbound("slack", "m", "slack:T:C:1", {})
        s.record_reply_message("slack", "m", 0, 0, "1.1", "stream")
        s.record_reply_message("slack", "m", 0, 0, "1.1", "message")  # the stream ended: a message now
        s.record_reply_message("slack", "m", 0, 1, "1.2", "message")
        s.forget_reply_message("slack", "m", 0, 1)
        assert s.reply_messages("slack", "m") == [ReplyMessageRecord(0, 0, "1.1", "message")]
        assert s.reply_messages("slack", "other") == []


def test_tools_that_ran_are_listed_and_a_reopened_message_starts_clean(place: Place) -> None:
    with place.open() as s:
        s.record_inbound("discord", "9", "discord:5", {"text": "fix it"})
        s.note_inbound_tool("discord", "9", "touch x", "execute")
        s.note_inbound_tool("discord", "9", "Edit main.py", "edit")
    with place.open() as s:
        [row] = s.unfinished_inbound()
        assert row.progress == "tool"
        assert row.tools == (("touch x", "execute"), ("Edit main.py", "edit"))
        s.complete_inbound("discord", "9")
        assert s.unfinished_inbound() == []
        s.reopen_inbound("discord", "9")
        [again] = s.unfinished_inbound()
        assert (again.message_id, again.progress, again.tools) == ("9", "", ())
        assert again.payload == {"text": "fix it"}


def test_prune_forgets_the_reply_messages_of_the_messages_it_removes(store: Store) -> None:
    with nullcontext(store) as s:
        for mid in ("a", "b"):
            s.record_inbound("telegram", mid, "telegram:1", {})
            s.record_reply_message("telegram", mid, 0, 0, f"id-{mid}", "message")
        s.complete_inbound("telegram", "a")
        assert s.prune_inbound(-1) == 1
        assert s.reply_messages("telegram", "a") == []
        assert s.reply_messages("telegram", "b") == [ReplyMessageRecord(0, 0, "id-b", "message")]


def test_a_version_4_store_with_an_unfinished_tool_message_migrates(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    conn = sqlite3.connect(path)
    for migration in MIGRATIONS[:4]:
        for statement in migration:
            conn.execute(SQLITE.render(statement))
    conn.execute("INSERT INTO inbound (surface, message_id, conversation_key, payload, received_at, progress)"
                 " VALUES ('telegram', '1', 'telegram:1', '{}', 1.0, 'tool')")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    with Store.open(path) as s:
        [row] = s.unfinished_inbound()
        assert (row.progress, row.tools, row.reply_started) == ("tool", (), None)
        assert s.reply_messages("telegram", "1") == []
