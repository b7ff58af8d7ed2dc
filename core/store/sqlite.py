"""The SQLite backend: one file, WAL mode, ``synchronous=NORMAL``.

A commit survives a relay crash and a call takes well under a millisecond, so the event loop calls
directly; the log's checkpoints (its fsyncs) run on a thread of their own (``core.wal_checkpoints``).
Another connection holding the file costs one wait of the whole busy timeout, not one a write
(``HELD_WAIT_MS``).
Relays sharing a SQLite file must share a machine; the leases still work among them (a write
transaction excludes every other), with the machine's clock.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from core.private_files import SQLITE_COMPANIONS, private_file
from core.store.backend import Backend, Clock, Result, Transaction
from core.store.dialect import SQLITE
from core.store.notes import LocalHub, Note
from core.store.records import StoreError, disk_full
from core.wal_checkpoints import WalCheckpointer, WriterLock

__all__ = ["SqliteBackend"]

_log = logging.getLogger("acp_relay.store")
_HUBS: dict[str, LocalHub] = {}
#: Once another connection held the file past the whole busy timeout, the writes after it wait only this
#: long (ms) each, until one is taken: every write waits on the event loop, and a file held for minutes
#: (a ``sqlite3`` shell left in a transaction, a relay sharing the file frozen in one) would stop the
#: whole relay for the full timeout at each of them (each refusal is transient: what was refused is
#: held and tried again).
HELD_WAIT_MS = 50


class SqliteBackend(Backend):
    """One sqlite3 connection in autocommit mode (each statement commits unless a transaction is open)."""

    dialect = SQLITE
    kind = "sqlite"

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._writes = WriterLock()  # the lock, which the file's checkpointer can take next when it must
        super().__init__(path, self._writes)
        self._conn = conn
        self._patience_ms = 0  # the busy timeout it was opened with (``open``)
        self._impatient = False  # the file was held past it: writes wait HELD_WAIT_MS until one is taken
        #: The file's checkpoints (none in memory, nor before ``open`` switched the file to WAL).
        self._checkpoints: WalCheckpointer | None = None
        # Stores opened on one file in one process are one relay's (or a test's two): they hear each other.
        self._hub = LocalHub() if path == ":memory:" else _HUBS.setdefault(path, LocalHub())

    @classmethod
    def open(cls, path: str | Path, *, busy_timeout_s: float) -> SqliteBackend:
        """Open (creating the file and its folders) ``path``, or ``":memory:"``; ``StoreError`` if not."""
        name = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        try:
            if name != ":memory:":
                private_file(Path(name), SQLITE_COMPANIONS)  # prompts and answers: the owner's alone
            conn = sqlite3.connect(name, busy_timeout_s, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(name, _describe(exc)) from exc
        backend = cls(conn, name)
        try:
            backend._patience_ms = int(busy_timeout_s * 1000)
            backend.execute(f"PRAGMA busy_timeout = {backend._patience_ms}")
            mode = backend.switch_to_wal(busy_timeout_s)
            if mode != "wal" and name != ":memory:":
                _log.warning("store %s: journal_mode is %s, not wal", name, mode)
            backend.execute("PRAGMA synchronous = NORMAL")
            if mode == "wal":
                backend._checkpoints = WalCheckpointer.start(conn, name, backend._writes, owner=backend)
        except BaseException:
            conn.close()
            raise
        return backend

    def switch_to_wal(self, busy_timeout_s: float) -> str:
        """``PRAGMA journal_mode = WAL``, tried again while another connection holds the file: the switch
        holds a shared lock while it asks for an exclusive one, so SQLite answers "locked" at once
        (no busy handler: waiting could deadlock) when relays open a new file together."""
        give_up = time.monotonic() + busy_timeout_s
        while True:
            try:
                return str(self.execute("PRAGMA journal_mode = WAL").rows[0][0])
            except StoreError as exc:
                if "locked" not in exc.detail or time.monotonic() >= give_up:
                    raise
            time.sleep(0.02)

    def _execute(self, sql: str, params: Sequence[Any]) -> Result:
        try:
            cur = self._conn.execute(sql, tuple(params))
            result = Result(cur.rowcount, cur.fetchall())
        except sqlite3.Error as exc:
            held = _held(exc)
            if held:
                self._wait(min(HELD_WAIT_MS, self._patience_ms))
            raise self._error(_describe(exc), transient=held, full=disk_full(exc)) from exc
        if self._impatient and (result.rowcount > 0 or self._conn.in_transaction):  # a write was taken
            self._wait(self._patience_ms)
        if self._checkpoints is not None and result.rowcount > 0 and not self._conn.in_transaction:
            self._checkpoints.committed()  # a write outside a transaction commits on its own
        return result

    def _wait(self, busy_timeout_ms: int) -> None:
        """Wait up to ``busy_timeout_ms`` for another connection's write lock from now on."""
        self._impatient = busy_timeout_ms < self._patience_ms
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        except sqlite3.Error as exc:  # a connection closing meanwhile: its next statement says why
            _log.debug("store %s: could not set the busy timeout: %s", self.location, exc)

    def _begin(self) -> None:
        self._execute("BEGIN IMMEDIATE", ())

    def _commit(self) -> None:
        self._execute("COMMIT", ())
        if self._checkpoints is not None:
            self._checkpoints.committed()

    def _rollback(self) -> None:
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            _log.warning("store %s: rollback failed", self.location, exc_info=True)

    def _close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.stop()  # first: the file's last connection to close checkpoints it (this one)
        self._conn.close()

    def _notify(self, note: Note) -> None:
        if self._tx is not None:
            self._tx.notes.append(note)
        else:
            self._hub.deliver([note])

    def _committed(self, tx: Transaction) -> None:
        self._hub.deliver(tx.notes)

    def listen(self, channels: Sequence[str]) -> AbstractAsyncContextManager[AsyncIterator[Note]]:
        """This process's listeners (a SQLite store has no other relay to wake)."""
        return self._hub.listen(channels)

    def has_table(self, name: str) -> bool:
        """The table exists in the file."""
        return bool(self.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).rows)

    def legacy_version(self) -> int:
        """``PRAGMA user_version``: how acp-relay versioned the file before the version table."""
        return int(self.execute("PRAGMA user_version").rows[0][0])

    def lock_schema(self) -> None:
        """Nothing to do: the migration's ``BEGIN IMMEDIATE`` already excludes every other writer."""

    def schema_migrated(self, version: int) -> None:
        """Mirror the version in ``user_version``."""
        self.execute(f"PRAGMA user_version = {int(version)}")

    def clock(self) -> Clock:
        """The relay's own clock: the file has no other."""
        start = time.perf_counter()
        self.execute("SELECT 1")
        return Clock(0.0, time.perf_counter() - start)


def _held(exc: sqlite3.Error) -> bool:
    """Another connection held the file past the busy timeout (SQLITE_BUSY, SQLITE_LOCKED): it lets go
    in time, as a PostgreSQL row lock does (transient there too), so what was refused is tried again."""
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


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
