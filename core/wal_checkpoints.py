"""Checkpoint a SQLite file's write-ahead log on a thread of its own, never in the writer's commit.

In WAL mode a commit appends to the ``-wal`` file; a checkpoint copies those pages back into the
database file and fsyncs both. SQLite runs one itself, in the committing call, once the log holds
1,000 pages (``wal_autocheckpoint``): on the relay that call is the event loop's, so every few hundred
commits one of them stalls for milliseconds (fsyncs), and in a burst every conversation waits for it.
The relay's connections turn that off; a ``WalCheckpointer`` runs ``PRAGMA wal_checkpoint(PASSIVE)``
on a connection of its own instead, every ``every`` commits the writer reports (400 by default: a
few pages each, about as much log as SQLite would let grow; checkpointing more often cost more CPU for
no shorter stalls). Python's sqlite3 releases the GIL while SQLite works, and a PASSIVE checkpoint
never waits for (nor blocks) a writer.

A checkpoint does not make a commit durable: a commit is in the log once it returns, and a killed
process loses none (``synchronous=NORMAL`` in WAL mode; only a power cut may lose the last ones).

The log starts over only after a checkpoint that copied all of it, at the next write, which fsyncs
the log's new header: the checkpointer makes that write itself (``_start_over``) while it holds the
writer's own lock, taken only if free. In a burst the writer commits during every checkpoint, so none
of them finishes and the log would grow for as long as the burst lasts; once it holds ``cap`` pages
the checkpointer waits for the writer's lock (the writer's commits then wait, as one running SQLite's
own checkpoint would) for one checkpoint that finishes. That lock is a ``WriterLock``, which lets the
checkpointer in first: Python's own locks are not fair, and a writer that takes its lock again as soon
as it lets it go (a burst) took it first through hundreds of commits while the checkpointer waited (the
log of a test with a cap of 200 pages reached 6,000).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

__all__ = ["WalCheckpointer", "WriterLock"]

_log = logging.getLogger("acp_relay.sqlite")
_PASSIVE = "PRAGMA wal_checkpoint(PASSIVE)"
#: Another connection holds the file or the checkpoint: try again next time, nothing is wrong.
_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
#: How often a checkpointer waiting for the writer's lock looks whether it is being stopped.
_POLL_S = 0.05


class WriterLock:
    """The lock a SQLite file's writer holds around each of its statements and transactions (``with``,
    reentrant like ``threading.RLock``), which the file's checkpointer can ask to have next: while it
    waits (``take_next``), a thread that does not hold the lock waits too, until the checkpointer gives
    it back (``give_back``); a thread that holds it goes on (a nested ``with``) and lets it go as usual."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None  # set and cleared by the thread that holds the lock, and only by it
        self._depth = 0
        self._writers_turn = threading.Event()
        self._writers_turn.set()

    def __enter__(self) -> None:
        me = threading.get_ident()
        if self._owner != me:
            if not self._writers_turn.is_set():
                self._writers_turn.wait()
            self._lock.acquire()
            self._owner = me
        self._depth += 1

    def __exit__(self, *_: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._owner = None
            self._lock.release()

    @property
    def checkpointer_first(self) -> bool:
        """Whether the checkpointer is first in line for the lock (``take_next`` until ``give_back``)."""
        return not self._writers_turn.is_set()

    def take_next(self, timeout: float) -> bool:
        """(The checkpointer) Take the lock before any thread that does not hold it now; False if it was
        not let go within ``timeout`` (still first in line: ``give_back(held=False)`` ends that)."""
        self._writers_turn.clear()
        return self._lock.acquire(timeout=timeout)

    def take_if_free(self) -> bool:
        """(The checkpointer) Take the lock only if no one holds it."""
        return self._lock.acquire(blocking=False)

    def give_back(self, *, held: bool = True) -> None:
        """(The checkpointer) Let the lock go if ``held``, and the writer's threads take it again."""
        if held:
            self._lock.release()
        self._writers_turn.set()


def _connect(path: str) -> sqlite3.Connection:
    # No busy wait: a file another process writes is tried again next time, not waited for.
    return sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)


def _start_over(conn: sqlite3.Connection) -> None:
    """After a checkpoint that copied the whole log, with the writer held off: one write, so that it is
    this thread that rewinds the log and fsyncs its new header (SQLite does at the first write after),
    not the writer's next commit. It writes the file's ``user_version`` as it is."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        conn.execute(f"PRAGMA user_version = {int(version)}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class WalCheckpointer:
    """One SQLite file's checkpoints, on a thread of its own (``start``); ``stop`` ends it."""

    def __init__(self, path: str, writer_lock: WriterLock, *, every: int = 400, cap: int = 4000,
                 connect: Callable[[str], sqlite3.Connection] = _connect) -> None:
        """Use :meth:`WalCheckpointer.start`. ``writer_lock`` is held by the writer around each of its
        statements and transactions; ``cap`` is in pages of the log; ``connect`` opens the thread's
        connection to ``path``."""
        self._connect = connect
        self.path = path
        self.every = every
        self.cap = cap
        #: Checkpoints tried so far (busy or failed ones too).
        self.runs = 0
        #: What the last checkpoint that ran said: (busy, pages in the log, pages copied).
        self.last: tuple[int, int, int] | None = None
        self._writer_lock = writer_lock
        self._commits = 0
        self._due = threading.Event()
        self._stopping = False
        self._warned = False
        self._thread = threading.Thread(target=self._run, name=f"wal-checkpoints {Path(path).name}", daemon=True)

    @classmethod
    def start(cls, conn: sqlite3.Connection, path: str, writer_lock: WriterLock, *, owner: object = None,
              every: int = 400, cap: int = 4000,
              connect: Callable[[str], sqlite3.Connection] = _connect) -> WalCheckpointer:
        """Turn ``conn``'s own checkpoints off and checkpoint ``path`` beside it from now on, until
        ``stop`` (or until ``owner``, the object that writes, is dropped without being closed)."""
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        checkpointer = cls(path, writer_lock, every=every, cap=cap, connect=connect)
        checkpointer._thread.start()
        if owner is not None:
            weakref.finalize(owner, checkpointer.stop)
        return checkpointer

    def committed(self) -> None:
        """The writer committed (cheap: a count; every ``every`` commits wakes the thread)."""
        self._commits += 1
        if self._commits >= self.every:
            self._commits = 0
            self._due.set()

    def request(self) -> None:
        """Checkpoint soon, whatever the count."""
        self._due.set()

    def stop(self) -> None:
        """End the thread (after the checkpoint it runs, if any) and close its connection; idempotent."""
        self._stopping = True
        self._due.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._due.wait()
                self._due.clear()
                if self._stopping:
                    return
                conn = self._checkpoint(conn)
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: sqlite3.Connection | None) -> sqlite3.Connection | None:
        """One checkpoint; then, holding the writer off, one that finishes and the log's start-over."""
        self.runs += 1
        try:
            if conn is None:  # opened here: the event loop never waits for it
                conn = self._connect(self.path)
            self.last = conn.execute(_PASSIVE).fetchone()
            if self.last is not None and self._held(*self.last):
                try:
                    self.last = conn.execute(_PASSIVE).fetchone()  # nothing left to copy if it finished
                    if self.last is not None and self.last[2] == self.last[1] > 0:
                        _start_over(conn)
                finally:
                    self._writer_lock.give_back()
        except sqlite3.Error as exc:
            if exc.sqlite_errorcode & 0xFF not in _BUSY and not self._warned:
                self._warned = True  # once: the log would repeat it for every checkpoint
                _log.warning("SQLite file %s: its write-ahead log could not be checkpointed (%s); the log grows "
                             "until a checkpoint works (commits are not affected)", self.path, exc)
        return conn

    def _held(self, busy: int, log: int, copied: int) -> bool:
        """After a checkpoint: whether to hold the writer off (now held) for one that finishes, then
        the log's start-over. Past ``cap``, wait for the writer; after one that copied the whole log,
        only if the writer is not writing (then it is the writer's next commit that would start over)."""
        if log >= self.cap:
            return self._hold_writer()
        return copied == log > 0 and self._writer_lock.take_if_free()

    def _hold_writer(self) -> bool:
        """Take the writer's lock next (False once stopping: ``stop`` may be waiting with it held)."""
        while not self._stopping:
            if self._writer_lock.take_next(_POLL_S):
                return True
        self._writer_lock.give_back(held=False)
        return False
