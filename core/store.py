"""SQLite persistence behind a narrow, synchronous interface (a PostgreSQL backend could replace it).

What survives a restart: conversations (ACP session, generation), the inbound journal (de-duplication
by platform message id; replay of what a killed relay never finished, with the platform messages its
answer was shown in and the tools its turn ran), surface offsets, and the outbound ledger. WAL mode
with ``synchronous=NORMAL``: a commit survives a relay crash and a call takes well under a
millisecond, so async callers call directly. The schema is versioned by
``PRAGMA user_version`` and :data:`MIGRATIONS`. Every sqlite failure becomes :class:`StoreError`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from core.errors import RelayError
from core.private_files import SQLITE_COMPANIONS, private_file

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "ConversationRecord",
    "InboundRecord",
    "OutboundRecord",
    "ReplyMessageRecord",
    "Store",
    "StoreError",
]

_log = logging.getLogger("acp_relay.store")

# Ordered; entry i brings the schema from user_version i to i + 1. Never edit a shipped entry.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE conversations (
            key TEXT PRIMARY KEY, agent TEXT NOT NULL, cwd TEXT NOT NULL, session_id TEXT,
            generation INTEGER NOT NULL, model TEXT, updated_at REAL NOT NULL)""",
        """CREATE TABLE inbound (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, surface TEXT NOT NULL, message_id TEXT NOT NULL,
            conversation_key TEXT NOT NULL, payload TEXT NOT NULL, received_at REAL NOT NULL,
            completed_at REAL, UNIQUE (surface, message_id))""",
        "CREATE INDEX inbound_completed ON inbound (completed_at)",
        "CREATE TABLE offsets (surface TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,"
        " PRIMARY KEY (surface, name))",
        """CREATE TABLE outbound (
            id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_key TEXT NOT NULL,
            payload TEXT NOT NULL, created_at REAL NOT NULL)""",
    ),
    # 2: what the agent needs to load a session again (Kiro's ``_kiro.dev/session_file``).
    ("ALTER TABLE conversations ADD COLUMN session_meta TEXT NOT NULL DEFAULT '{}'",),
    # 3: how far an unfinished message got ("tool": a tool may have run, so it is not replayed).
    ("ALTER TABLE inbound ADD COLUMN progress TEXT NOT NULL DEFAULT ''",),
    # 4: the context usage the agent last reported (a conversation evicted from memory keeps it).
    ("ALTER TABLE conversations ADD COLUMN context_pct REAL",),
    # 5: an unfinished answer's platform messages (a restart continues in them), when its reply
    # started, and the side-effecting tools its turn ran (a restart asks before sending it again).
    (
        "ALTER TABLE inbound ADD COLUMN reply_started REAL",
        "ALTER TABLE inbound ADD COLUMN tools TEXT NOT NULL DEFAULT '[]'",
        """CREATE TABLE reply_messages (
            surface TEXT NOT NULL, message_id TEXT NOT NULL, part INTEGER NOT NULL, piece INTEGER NOT NULL,
            platform_id TEXT NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (surface, message_id, part, piece))""",
    ),
    # 6: when a surface last wrote each of its state rows, so rows no longer used can be pruned (rows
    # from before count as written now: nothing is forgotten at the upgrade).
    (
        "ALTER TABLE offsets ADD COLUMN updated_at REAL NOT NULL DEFAULT 0",
        "UPDATE offsets SET updated_at = CAST(strftime('%s', 'now') AS REAL)",
    ),
    # 7: what a person chose for the conversation from the chat (its project, its mode), the session's
    # title, and what each of its sessions has cost (session id -> {amount, currency}).
    (
        "ALTER TABLE conversations ADD COLUMN project TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE conversations ADD COLUMN mode TEXT",
        "ALTER TABLE conversations ADD COLUMN title TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE conversations ADD COLUMN costs TEXT NOT NULL DEFAULT '{}'",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)
# ConversationRecord order
_CONV_COLS = ("key, agent, cwd, session_id, generation, model, updated_at, session_meta, context_pct,"
              " project, mode, title, costs")


class StoreError(RelayError):
    """The store cannot be used; ``path`` names the file, ``detail`` says why."""

    code = "store"

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"store {path}: {detail}")


@dataclass(slots=True)
class ConversationRecord:
    """A conversation's binding to an agent session.

    ``generation`` counts resets; an empty ``agent`` or ``cwd`` (a row created by a reset of an
    unknown key) means "not chosen yet: use the configured default".
    """

    key: str
    agent: str
    cwd: str
    session_id: str | None = None
    generation: int = 0
    model: str | None = None
    updated_at: float = 0.0
    #: ``_meta`` to send with ``session/load`` (Kiro ignores a load without its session file).
    session_meta: dict[str, Any] = field(default_factory=dict)
    #: The share of the context window in use when the agent last said (percent).
    context_pct: float | None = None
    #: The configured project chosen from the chat ("" none: the agent's own folder).
    project: str = ""
    #: The modes and select options chosen from the chat, one a line (a mode id, or ``configId=value``),
    #: applied again to each new session.
    mode: str | None = None
    #: The session's title, as the agent last gave it.
    title: str = ""
    #: What each of its sessions last reported it had cost: session id -> {amount, currency}.
    costs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def _row(self) -> tuple[Any, ...]:
        return (self.key, self.agent, self.cwd, self.session_id, self.generation, self.model, time.time(),
                json.dumps(self.session_meta), self.context_pct, self.project, self.mode, self.title,
                json.dumps(self.costs))

    @classmethod
    def _from_row(cls, row: tuple[Any, ...]) -> ConversationRecord:
        key, agent, cwd, session_id, generation, model, updated_at, meta, context_pct, project, mode, title, costs = row
        return cls(key, agent, cwd, session_id, generation, model, updated_at, json.loads(meta) if meta else {},
                   context_pct, project or "", mode, title or "", json.loads(costs) if costs else {})


@dataclass(frozen=True, slots=True)
class InboundRecord:
    """A journaled inbound message; ``seq`` gives arrival order."""

    seq: int
    surface: str
    message_id: str
    conversation_key: str
    payload: dict[str, Any]
    received_at: float
    progress: str = ""
    #: When the first platform message of its answer was posted (None: nothing shown yet).
    reply_started: float | None = None
    #: (title, kind) of each side-effecting tool call its turn saw run, in order.
    tools: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ReplyMessageRecord:
    """One platform message (or native stream, ``kind`` "stream") showing piece ``piece`` of part
    ``part`` of an answer."""

    part: int
    piece: int
    platform_id: str
    kind: str


@dataclass(frozen=True, slots=True)
class OutboundRecord:
    """A message the relay owes a conversation and has not yet delivered."""

    id: int
    conversation_key: str
    payload: dict[str, Any]
    created_at: float


class Store:
    """One SQLite connection; safe to share between the event loop and worker threads."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        """Wrap an open connection; use :meth:`Store.open`."""
        self._conn = conn
        self._path = path
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str | Path, *, busy_timeout_s: float = 5.0) -> Store:
        """Open (creating if needed) and migrate the store at ``path``; ``":memory:"`` for tests.

        A writer holding the file longer than ``busy_timeout_s`` makes the call raise
        :class:`StoreError`, as does a file that is not a SQLite database.
        """
        name = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        try:
            if name != ":memory:":
                private_file(Path(name), SQLITE_COMPANIONS)  # prompts and answers: the owner's alone
            # isolation_level=None: autocommit, so each statement commits unless we BEGIN ourselves.
            conn = sqlite3.connect(name, busy_timeout_s, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(name, _describe(exc)) from exc
        store = cls(conn, name)
        try:
            store._run(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            mode = store._run("PRAGMA journal_mode = WAL")[1][0][0]
            if mode != "wal" and name != ":memory:":
                _log.warning("store %s: journal_mode is %s, not wal", name, mode)
            store._run("PRAGMA synchronous = NORMAL")
            store._migrate()
        except BaseException:
            conn.close()
            raise
        return store

    @property
    def path(self) -> str:
        """The database file (``~`` expanded)."""
        return self._path

    def close(self) -> None:
        """Close the connection; idempotent."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        """Use the store as a context manager that closes it."""
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the store."""
        self.close()

    def get_conversation(self, key: str) -> ConversationRecord | None:
        """The conversation stored under ``key``, or None."""
        rows = self._run(f"SELECT {_CONV_COLS} FROM conversations WHERE key = ?", (key,))[1]
        return ConversationRecord._from_row(rows[0]) if rows else None

    def save_conversation(self, rec: ConversationRecord) -> bool:
        """Upsert ``rec``, stamping ``updated_at``; False when it was ignored as stale.

        A record whose ``generation`` is older than the stored one is ignored: a turn that ends
        after a reset must not bring the forgotten session back.
        """
        cur, _ = self._run(
            f"INSERT INTO conversations ({_CONV_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET"
            " agent = excluded.agent, cwd = excluded.cwd, session_id = excluded.session_id,"
            " generation = excluded.generation, model = excluded.model, updated_at = excluded.updated_at,"
            " session_meta = excluded.session_meta, context_pct = excluded.context_pct,"
            " project = excluded.project, mode = excluded.mode, title = excluded.title, costs = excluded.costs"
            " WHERE excluded.generation >= conversations.generation",
            rec._row(),
        )
        return cur.rowcount == 1

    def reset_conversation(self, key: str) -> int:
        """Forget the session of ``key`` and return its new generation (committed before return).

        Agent, cwd, project, mode, model and the cost so far are kept (the title goes with the session).
        An unknown key gets a row with generation 1 and an empty agent and cwd, so a later stale save
        from generation 0 is still refused.
        """
        _, rows = self._run(
            f"INSERT INTO conversations ({_CONV_COLS}) VALUES (?, '', '', NULL, 1, NULL, ?, '{{}}', NULL, '', NULL,"
            " '', '{}') ON CONFLICT (key) DO UPDATE SET"
            " session_id = NULL, session_meta = '{}', context_pct = NULL, title = '',"
            " generation = conversations.generation + 1,"
            " updated_at = excluded.updated_at RETURNING generation",
            (key, time.time()),
        )
        return int(rows[0][0])

    def record_inbound(
        self, surface: str, message_id: str, conversation_key: str, payload: dict[str, Any]
    ) -> bool:
        """Journal an inbound message; False when ``(surface, message_id)`` was already recorded."""
        cur, _ = self._run(
            "INSERT OR IGNORE INTO inbound (surface, message_id, conversation_key, payload, received_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (surface, message_id, conversation_key, json.dumps(payload), time.time()),
        )
        return cur.rowcount == 1

    def reject_inbound(self, surface: str, message_id: str, reason: str) -> None:
        """Record an update that will not be answered (it could not be read, or its place could not be
        made) as handled at once: never replayed, and a redelivery of it is recognised. One already
        journaled is completed. ``reason`` must hold no message text."""
        now = time.time()
        self._run(
            "INSERT INTO inbound (surface, message_id, conversation_key, payload, received_at, completed_at,"
            " progress) VALUES (?, ?, '', ?, ?, ?, 'rejected') ON CONFLICT (surface, message_id) DO UPDATE"
            " SET completed_at = excluded.completed_at, progress = 'rejected' WHERE inbound.completed_at IS NULL",
            (surface, message_id, json.dumps({"rejected": reason}), now, now),
        )

    def complete_inbound(self, surface: str, message_id: str) -> None:
        """Mark a journaled message as fully handled, so it is not replayed after a restart."""
        sql = "UPDATE inbound SET completed_at = ? WHERE surface = ? AND message_id = ?"
        sql += " AND completed_at IS NULL"
        self._run(sql, (time.time(), surface, message_id))

    def unfinished_inbound(self) -> list[InboundRecord]:
        """Messages recorded but never completed, in arrival order (to replay after a restart)."""
        _, rows = self._run(
            "SELECT seq, surface, message_id, conversation_key, payload, received_at, progress, reply_started,"
            " tools FROM inbound WHERE completed_at IS NULL ORDER BY seq"
        )
        return [InboundRecord(seq, s, m, k, json.loads(p), t, g, r, _tools(u)) for seq, s, m, k, p, t, g, r, u in rows]

    def set_inbound_progress(self, surface: str, message_id: str, progress: str) -> None:
        """Note how far an unfinished message got (``"tool"``: a tool may have run)."""
        self._run("UPDATE inbound SET progress = ? WHERE surface = ? AND message_id = ?",
                  (progress, surface, message_id))

    def note_inbound_tool(self, surface: str, message_id: str, title: str, kind: str) -> None:
        """A side-effecting tool (``title``, ``kind``) may have run for this message (progress "tool")."""
        self._run("UPDATE inbound SET progress = 'tool', tools = json_insert(tools, '$[#]', json(?))"
                  " WHERE surface = ? AND message_id = ?", (json.dumps([title, kind]), surface, message_id))

    def reopen_inbound(self, surface: str, message_id: str) -> None:
        """Handle a completed message again from the start (the person asked to send it again)."""
        self._run("UPDATE inbound SET completed_at = NULL, progress = '', tools = '[]'"
                  " WHERE surface = ? AND message_id = ?", (surface, message_id))

    def record_reply_message(self, surface: str, message_id: str, part: int, piece: int, platform_id: str,
                             kind: str) -> None:
        """``platform_id`` now shows piece ``piece`` of part ``part`` of the answer to ``message_id``.

        One transaction also marks the reply as started, so a restart never finds a started reply
        without the message it started in.
        """
        self._transaction(
            ("INSERT OR REPLACE INTO reply_messages (surface, message_id, part, piece, platform_id, kind)"
             " VALUES (?, ?, ?, ?, ?, ?)", (surface, message_id, part, piece, platform_id, kind)),
            ("UPDATE inbound SET reply_started = ? WHERE surface = ? AND message_id = ? AND reply_started IS NULL",
             (time.time(), surface, message_id)),
        )

    def forget_reply_message(self, surface: str, message_id: str, part: int, piece: int) -> None:
        """The answer no longer shows piece ``piece`` of part ``part`` (its message was removed)."""
        self._run("DELETE FROM reply_messages WHERE surface = ? AND message_id = ? AND part = ? AND piece = ?",
                  (surface, message_id, part, piece))

    def reply_messages(self, surface: str, message_id: str) -> list[ReplyMessageRecord]:
        """The platform messages showing the answer to ``message_id``, by part and piece."""
        _, rows = self._run("SELECT part, piece, platform_id, kind FROM reply_messages"
                            " WHERE surface = ? AND message_id = ? ORDER BY part, piece", (surface, message_id))
        return [ReplyMessageRecord(int(a), int(b), str(c), str(d)) for a, b, c, d in rows]

    def prune_inbound(self, older_than_s: float) -> int:
        """Delete messages completed more than ``older_than_s`` ago (and the record of their answers'
        messages); returns how many.

        Their ids stop being de-duplicated, so keep the window longer than any platform redelivers.
        """
        old = "completed_at IS NOT NULL AND completed_at < ?"
        cutoff = (time.time() - older_than_s,)
        cur, _ = self._transaction(
            ("DELETE FROM reply_messages WHERE (surface, message_id) IN"
             f" (SELECT surface, message_id FROM inbound WHERE {old})", cutoff),
            (f"DELETE FROM inbound WHERE {old}", cutoff),
        )
        return cur.rowcount

    def get_offset(self, surface: str, name: str) -> str | None:
        """A surface's saved position (e.g. Telegram's update offset), or None."""
        rows = self._run("SELECT value FROM offsets WHERE surface = ? AND name = ?", (surface, name))[1]
        return str(rows[0][0]) if rows else None

    def offsets(self, surface: str, prefix: str = "") -> dict[str, str]:
        """Every position ``surface`` saved (those whose name starts with ``prefix``), by name (a surface
        keeping one per channel lists them at start)."""
        rows = self._run("SELECT name, value FROM offsets WHERE surface = ? AND substr(name, 1, ?) = ?"
                         " ORDER BY name", (surface, len(prefix), prefix))[1]
        return {str(name): str(value) for name, value in rows}

    def set_offset(self, surface: str, name: str, value: str) -> None:
        """Save a surface's position, replacing the previous one (and noting when)."""
        self._run(
            "INSERT INTO offsets (surface, name, value, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (surface, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (surface, name, value, time.time()),
        )

    def prune_offsets(self, surface: str, older_than_s: float, prefix: str = "") -> int:
        """Delete ``surface``'s positions whose name starts with ``prefix`` and that were not written
        for ``older_than_s``; returns how many."""
        cur, _ = self._run("DELETE FROM offsets WHERE surface = ? AND substr(name, 1, ?) = ? AND updated_at < ?",
                           (surface, len(prefix), prefix, time.time() - older_than_s))
        return cur.rowcount

    def add_outbound(self, conversation_key: str, payload: dict[str, Any]) -> int:
        """Record a message owed to a conversation; returns its ledger id."""
        cur, _ = self._run(
            "INSERT INTO outbound (conversation_key, payload, created_at) VALUES (?, ?, ?)",
            (conversation_key, json.dumps(payload), time.time()),
        )
        assert cur.lastrowid is not None  # an INSERT into a rowid table always sets it
        return cur.lastrowid

    def ack_outbound(self, id: int) -> None:
        """The message was delivered: drop it from the ledger (unknown ids are ignored)."""
        self._run("DELETE FROM outbound WHERE id = ?", (id,))

    def pending_outbound(self) -> list[OutboundRecord]:
        """Messages added and not acknowledged, oldest first."""
        _, rows = self._run("SELECT id, conversation_key, payload, created_at FROM outbound ORDER BY id")
        return [OutboundRecord(i, k, json.loads(p), t) for i, k, p, t in rows]

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[sqlite3.Cursor, list[Any]]:
        """Execute one statement (atomic on its own) under the lock; sqlite errors become StoreError."""
        with self._lock:
            try:
                cur = self._conn.execute(sql, params)
                return cur, cur.fetchall()
            except sqlite3.Error as exc:
                raise StoreError(self._path, _describe(exc)) from exc

    def _transaction(self, *statements: tuple[str, tuple[Any, ...]]) -> tuple[sqlite3.Cursor, list[Any]]:
        """Execute ``statements`` in one write transaction; returns the last one's cursor and rows."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    results = [(cur, cur.fetchall()) for cur in
                               (self._conn.execute(sql, params) for sql, params in statements)]
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StoreError(self._path, _describe(exc)) from exc
        return results[-1]

    def _migrate(self) -> None:
        """Apply pending migrations in one write transaction (runs inside :meth:`open`)."""
        version = self._user_version()
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            detail = f"schema version {version} is newer than this acp-relay supports ({SCHEMA_VERSION})"
            raise StoreError(self._path, detail)
        self._run("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            for target in range(self._user_version() + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target - 1]:
                    self._run(statement)
                self._run(f"PRAGMA user_version = {target}")
            self._run("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _user_version(self) -> int:
        return int(self._run("PRAGMA user_version")[1][0][0])


def _tools(column: str) -> tuple[tuple[str, str], ...]:
    return tuple((str(title), str(kind)) for title, kind in json.loads(column))


def _describe(exc: OSError | sqlite3.Error) -> str:
    """Plain words for the failures an operator can act on."""
    if isinstance(exc, OSError):
        reason = exc.strerror or exc
        return f"cannot create the database file or its folder ({reason}); check the path and its permissions"
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return f"not a usable SQLite database ({text}); move the file aside to start a fresh store"
    if "locked" in text or "busy" in text:
        return f"the database is locked by another process ({text}); is another acp-relay running?"
    if "unable to open" in text or "readonly" in text:
        return f"cannot open or write the database file ({text}); check the path and its permissions"
    return text
