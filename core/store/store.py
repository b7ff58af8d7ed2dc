"""The store: one synchronous interface over SQLite or PostgreSQL.

What survives a restart: conversations (ACP session, generation), the inbound journal (de-duplication
by platform message id; replay of what a killed relay never finished, with the platform messages its
answer was shown in and the tools its turn ran), the surfaces' state, the outbound ledger, and the
leases of relays sharing a PostgreSQL database. Every statement is written once, in portable SQL
(``core.store.dialect``). A call takes well under a millisecond on SQLite and one round trip (about
0.1 to 0.5 ms on loopback or a LAN) on PostgreSQL, so async callers call directly (README, "Several
relays, one PostgreSQL"). Every failure is a :class:`~core.store.records.StoreError`.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from core.store.backend import Backend, Clock, Result
from core.store.leases import Lease, Leases, check_fence
from core.store.records import ConversationRecord, InboundRecord, OutboundRecord, ReplyMessageRecord
from core.store.schema import migrate, schema_version
from core.store.sqlite import SqliteBackend

__all__ = ["Store"]

# ConversationRecord order
_CONV_COLS = ("key, agent, cwd, session_id, generation, model, updated_at, session_meta, context_pct,"
              " project, mode, title, costs")


class Store:
    """The relay's state; safe to share between the event loop and worker threads."""

    def __init__(self, backend: Backend, fence: Lease | None = None) -> None:
        """Wrap an open backend; use :meth:`Store.open` (SQLite) or ``core.store.open_store``."""
        self._backend = backend
        self._fence = fence
        #: Ownership leases (``core.store.leases``).
        self.leases = Leases(backend)

    @classmethod
    def open(cls, path: str | Path, *, busy_timeout_s: float = 5.0) -> Store:
        """Open (creating if needed) and migrate the SQLite store at ``path``; ``":memory:"`` for tests.

        A writer holding the file longer than ``busy_timeout_s`` makes the call raise
        :class:`StoreError`, as does a file that is not a SQLite database.
        """
        return cls.on(SqliteBackend.open(path, busy_timeout_s=busy_timeout_s))

    @classmethod
    def on(cls, backend: Backend) -> Store:
        """The store on ``backend``, its schema created or migrated first (closed again if that fails)."""
        try:
            migrate(backend)
        except BaseException:
            backend.close()
            raise
        return cls(backend)

    @property
    def path(self) -> str:
        """The database file (``~`` expanded), or the database's URL without its password."""
        return self._backend.location

    @property
    def backend(self) -> Backend:
        """The database underneath (its ``kind``: "sqlite" or "postgresql")."""
        return self._backend

    def close(self) -> None:
        """Close the connection (a fenced view's too: it is the same); idempotent."""
        self._backend.close()

    def __enter__(self) -> Store:
        """Use the store as a context manager that closes it."""
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the store."""
        self.close()

    def fenced(self, lease: Lease) -> Store:
        """The same store, whose every write first checks that ``lease`` was not taken over (and locks
        it until the write commits); a write after a takeover raises ``LeaseLost``. Reads are as usual."""
        view = copy.copy(self)
        view._fence = lease
        return view

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The store's writes in the block commit together (or not at all, if it raises); a fenced
        view checks its lease once, first."""
        with self._backend.transaction() as tx:
            if self._fence is not None:
                check_fence(self._backend, tx, self._fence)
            yield

    def schema_version(self) -> int:
        """The version of the database's schema (this acp-relay's ``SCHEMA_VERSION`` once opened)."""
        return schema_version(self._backend)

    def clock(self) -> Clock:
        """The database server's clock against the relay's (``doctor``)."""
        return self._backend.clock()

    def get_conversation(self, key: str) -> ConversationRecord | None:
        """The conversation stored under ``key``, or None."""
        rows = self._read(f"SELECT {_CONV_COLS} FROM conversations WHERE key = ?", (key,))
        return ConversationRecord._from_row(rows[0]) if rows else None

    def save_conversation(self, rec: ConversationRecord) -> bool:
        """Upsert ``rec``, stamping ``updated_at``; False when it was ignored as stale.

        A record whose ``generation`` is older than the stored one is ignored: a turn that ends
        after a reset must not bring the forgotten session back.
        """
        result = self._write(
            f"INSERT INTO conversations ({_CONV_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET"
            " agent = excluded.agent, cwd = excluded.cwd, session_id = excluded.session_id,"
            " generation = excluded.generation, model = excluded.model, updated_at = excluded.updated_at,"
            " session_meta = excluded.session_meta, context_pct = excluded.context_pct,"
            " project = excluded.project, mode = excluded.mode, title = excluded.title, costs = excluded.costs"
            " WHERE excluded.generation >= conversations.generation",
            rec._row(),
        )
        return result.rowcount == 1

    def reset_conversation(self, key: str) -> int:
        """Forget the session of ``key`` and return its new generation (committed before return).

        Agent, cwd, project, mode, model and the cost so far are kept (the title goes with the session).
        An unknown key gets a row with generation 1 and an empty agent and cwd, so a later stale save
        from generation 0 is still refused.
        """
        result = self._write(
            f"INSERT INTO conversations ({_CONV_COLS}) VALUES (?, '', '', NULL, 1, NULL, ?, '{{}}', NULL, '', NULL,"
            " '', '{}') ON CONFLICT (key) DO UPDATE SET"
            " session_id = NULL, session_meta = '{}', context_pct = NULL, title = '',"
            " generation = conversations.generation + 1,"
            " updated_at = excluded.updated_at RETURNING generation",
            (key, time.time()),
        )
        return int(result.rows[0][0])

    def record_inbound(
        self, surface: str, message_id: str, conversation_key: str, payload: dict[str, Any], *,
        completed: bool = False,
    ) -> bool:
        """Journal an inbound message; False when ``(surface, message_id)`` was already recorded.
        ``completed``: handled once taken, never replayed (an edit: its row only recognises a repeat)."""
        now = time.time()
        result = self._write(
            "INSERT INTO inbound (surface, message_id, conversation_key, payload, received_at, completed_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (surface, message_id) DO NOTHING",
            (surface, message_id, conversation_key, json.dumps(payload), now, now if completed else None),
        )
        return result.rowcount == 1

    def taken_inbound(self, surface: str, message_id: str) -> InboundRecord | None:
        """A message taken in, as journaled, finished or not (None: never journaled, or rejected)."""
        rows = self._read(f"SELECT {_INBOUND_COLS} FROM inbound WHERE surface = ? AND message_id = ?"
                          " AND progress <> 'rejected'", (surface, message_id))
        return _inbound(rows[0]) if rows else None

    def forget_inbound(self, surface: str, message_id: str, payload: dict[str, Any]) -> None:
        """A message its person deleted: handled (never answered, also not after a restart), and what it said
        replaced by ``payload`` (kept only to recognise a redelivery)."""
        self._write("UPDATE inbound SET payload = ?, completed_at = COALESCE(completed_at, ?)"
                    " WHERE surface = ? AND message_id = ?", (json.dumps(payload), time.time(), surface, message_id))

    def rewrite_inbound(self, surface: str, message_id: str, payload: dict[str, Any]) -> bool:
        """Replace what an unfinished message says (edited before it was read); False when it is finished."""
        result = self._write("UPDATE inbound SET payload = ? WHERE surface = ? AND message_id = ?"
                             " AND completed_at IS NULL", (json.dumps(payload), surface, message_id))
        return result.rowcount == 1

    def reject_inbound(self, surface: str, message_id: str, reason: str) -> None:
        """Record an update that will not be answered (it could not be read, or its place could not be
        made) as handled at once: never replayed, and a redelivery of it is recognised. One already
        journaled is completed. ``reason`` must hold no message text."""
        now = time.time()
        self._write(
            "INSERT INTO inbound (surface, message_id, conversation_key, payload, received_at, completed_at,"
            " progress) VALUES (?, ?, '', ?, ?, ?, 'rejected') ON CONFLICT (surface, message_id) DO UPDATE"
            " SET completed_at = excluded.completed_at, progress = 'rejected' WHERE inbound.completed_at IS NULL",
            (surface, message_id, json.dumps({"rejected": reason}), now, now),
        )

    def complete_inbound(self, surface: str, message_id: str) -> None:
        """Mark a journaled message as fully handled, so it is not replayed after a restart."""
        self._write("UPDATE inbound SET completed_at = ? WHERE surface = ? AND message_id = ?"
                    " AND completed_at IS NULL", (time.time(), surface, message_id))

    def unfinished_inbound(self, conversation_key: str | None = None) -> list[InboundRecord]:
        """Messages recorded but never completed, in arrival order (to replay after a restart); only
        ``conversation_key``'s when given (its new owner's pickup)."""
        where, params = ("", ()) if conversation_key is None else (" AND conversation_key = ?", (conversation_key,))
        rows = self._read(f"SELECT {_INBOUND_COLS} FROM inbound WHERE completed_at IS NULL{where} ORDER BY seq", params)
        return [_inbound(row) for row in rows]

    def unowned_conversations(self, lease_prefix: str) -> list[str]:
        """The conversations with an unfinished message and no live lease named ``lease_prefix`` + key
        (never owned, released, or their owner died): oldest message first."""
        rows = self._read(
            "SELECT conversation_key, MIN(seq) FROM inbound i WHERE completed_at IS NULL AND conversation_key <> ''"
            " AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = ? || i.conversation_key AND l.expires_at > {now})"
            " GROUP BY conversation_key ORDER BY MIN(seq)", (lease_prefix,))
        return [str(key) for key, _ in rows]

    def set_inbound_progress(self, surface: str, message_id: str, progress: str) -> None:
        """Note how far an unfinished message got (``"tool"``: a tool may have run)."""
        self._write("UPDATE inbound SET progress = ? WHERE surface = ? AND message_id = ?",
                    (progress, surface, message_id))

    def note_inbound_tool(self, surface: str, message_id: str, title: str, kind: str) -> None:
        """A side-effecting tool (``title``, ``kind``) may have run for this message (progress "tool")."""
        self._write("UPDATE inbound SET progress = 'tool', tools = {json_append(tools)}"
                    " WHERE surface = ? AND message_id = ?", (json.dumps([title, kind]), surface, message_id))

    def reopen_inbound(self, surface: str, message_id: str) -> None:
        """Handle a completed message again from the start (the person asked to send it again)."""
        self._write("UPDATE inbound SET completed_at = NULL, progress = '', tools = '[]'"
                    " WHERE surface = ? AND message_id = ?", (surface, message_id))

    def record_reply_message(self, surface: str, message_id: str, part: int, piece: int, platform_id: str,
                             kind: str, *, started: bool = False) -> None:
        """``platform_id`` now shows piece ``piece`` of part ``part`` of the answer to ``message_id``.

        One transaction also marks the reply as started, so a restart never finds a started reply
        without the message it started in. ``started``: an earlier record of this reply already
        marked it, so the record is one statement on its own.
        """
        record = ("INSERT INTO reply_messages (surface, message_id, part, piece, platform_id, kind)"
                  " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (surface, message_id, part, piece) DO UPDATE"
                  " SET platform_id = excluded.platform_id, kind = excluded.kind")
        params = (surface, message_id, part, piece, platform_id, kind)
        if started:
            self._write(record, params)
            return
        with self.transaction():
            self._write(record, params)
            self._write("UPDATE inbound SET reply_started = ? WHERE surface = ? AND message_id = ?"
                        " AND reply_started IS NULL", (time.time(), surface, message_id))

    def forget_reply_message(self, surface: str, message_id: str, part: int, piece: int) -> None:
        """The answer no longer shows piece ``piece`` of part ``part`` (its message was removed)."""
        self._write("DELETE FROM reply_messages WHERE surface = ? AND message_id = ? AND part = ? AND piece = ?",
                    (surface, message_id, part, piece))

    def reply_messages(self, surface: str, message_id: str) -> list[ReplyMessageRecord]:
        """The platform messages showing the answer to ``message_id``, by part and piece."""
        rows = self._read("SELECT part, piece, platform_id, kind FROM reply_messages"
                          " WHERE surface = ? AND message_id = ? ORDER BY part, piece", (surface, message_id))
        return [ReplyMessageRecord(int(a), int(b), str(c), str(d)) for a, b, c, d in rows]

    def prune_inbound(self, older_than_s: float) -> int:
        """Delete messages completed more than ``older_than_s`` ago (and the record of their answers'
        messages); returns how many.

        Their ids stop being de-duplicated, so keep the window longer than any platform redelivers.
        """
        old = "completed_at IS NOT NULL AND completed_at < ?"
        cutoff = (time.time() - older_than_s,)
        with self.transaction():
            self._write("DELETE FROM reply_messages WHERE (surface, message_id) IN"
                        f" (SELECT surface, message_id FROM inbound WHERE {old})", cutoff)
            return self._write(f"DELETE FROM inbound WHERE {old}", cutoff).rowcount

    def get_offset(self, surface: str, name: str) -> str | None:
        """A surface's saved position (e.g. Telegram's update offset), or None."""
        rows = self._read("SELECT value FROM offsets WHERE surface = ? AND name = ?", (surface, name))
        return str(rows[0][0]) if rows else None

    def offsets(self, surface: str, prefix: str = "") -> dict[str, str]:
        """Every position ``surface`` saved (those whose name starts with ``prefix``), by name (a surface
        keeping one per channel lists them at start)."""
        where, params = _prefixed(prefix)
        rows = self._read(f"SELECT name, value FROM offsets WHERE surface = ?{where} ORDER BY name", (surface, *params))
        return {str(name): str(value) for name, value in rows}

    def set_offset(self, surface: str, name: str, value: str) -> None:
        """Save a surface's position, replacing the previous one (and noting when)."""
        self._write(
            "INSERT INTO offsets (surface, name, value, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (surface, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (surface, name, value, time.time()),
        )

    def prune_offsets(self, surface: str, older_than_s: float, prefix: str = "") -> int:
        """Delete ``surface``'s positions whose name starts with ``prefix`` and that were not written
        for ``older_than_s``; returns how many."""
        where, params = _prefixed(prefix)
        return self._write(f"DELETE FROM offsets WHERE surface = ?{where} AND updated_at < ?",
                           (surface, *params, time.time() - older_than_s)).rowcount

    def delete_offsets(self, surface: str, names: Sequence[str]) -> None:
        """Delete ``surface``'s positions named ``names``, in one transaction (a name not there is no error)."""
        with self.transaction():
            for name in names:
                self._write("DELETE FROM offsets WHERE surface = ? AND name = ?", (surface, name))

    def add_outbound(self, conversation_key: str, payload: dict[str, Any]) -> int:
        """Record a message owed to a conversation; returns its ledger id."""
        result = self._write("INSERT INTO outbound (conversation_key, payload, created_at) VALUES (?, ?, ?)"
                             " RETURNING id", (conversation_key, json.dumps(payload), time.time()))
        return int(result.rows[0][0])

    def ack_outbound(self, id: int) -> None:
        """The message was delivered: drop it from the ledger (unknown ids are ignored)."""
        self._write("DELETE FROM outbound WHERE id = ?", (id,))

    def pending_outbound(self) -> list[OutboundRecord]:
        """Messages added and not acknowledged, oldest first."""
        rows = self._read("SELECT id, conversation_key, payload, created_at FROM outbound ORDER BY id")
        return [OutboundRecord(i, k, json.loads(p), t) for i, k, p, t in rows]

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self._backend.execute(sql, params).rows

    def _write(self, sql: str, params: tuple[Any, ...] = ()) -> Result:
        """One write: on its own, or in the open transaction; a fenced view's inside a checked one."""
        if self._fence is None:
            return self._backend.execute(sql, params)
        with self.transaction():
            return self._backend.execute(sql, params)


_INBOUND_COLS = "seq, surface, message_id, conversation_key, payload, received_at, progress, reply_started, tools"


def _inbound(row: tuple[Any, ...]) -> InboundRecord:
    seq, surface, message_id, key, payload, received_at, progress, reply_started, tools = row
    return InboundRecord(seq, surface, message_id, key, json.loads(payload), received_at, progress, reply_started,
                         _tools(tools))


def _prefixed(prefix: str) -> tuple[str, tuple[str, ...]]:
    """The condition on ``name`` (and its parameters) for the names starting with ``prefix``: a range of
    the primary key (names compare byte by byte on both backends: schema 9), read through its index."""
    if not prefix:
        return "", ()
    after = _after(prefix)
    if after is None:  # nothing sorts after it: every name from the prefix on
        return " AND name >= ?", (prefix,)
    return " AND name >= ? AND name < ?", (prefix, after)


def _after(prefix: str) -> str | None:
    """The first string after every string starting with ``prefix`` (code point order, as UTF-8 bytes
    compare), or None when there is none."""
    kept = prefix.rstrip(chr(0x10FFFF))
    if not kept:
        return None
    following = ord(kept[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # surrogates are never in a name
        following = 0xE000
    return kept[:-1] + chr(following)


def _tools(column: str) -> tuple[tuple[str, str], ...]:
    return tuple((str(title), str(kind)) for title, kind in json.loads(column))
