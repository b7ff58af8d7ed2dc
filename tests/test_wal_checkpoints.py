"""A SQLite file's write-ahead log is checkpointed on a thread of its own (``core.wal_checkpoints``):
the writer's commits never run one, the log stays bounded while the writer never pauses, a file held
by another connection is tried again later, a checkpoint that fails is logged once and the writer
goes on, and stopping ends the thread even while the writer's lock is held. Conditions are waited
for (hang guards only), never timed.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from core.wal_checkpoints import WalCheckpointer, WriterLock
from tests.waiting import until

PAGE = 4096


def _wal_file(tmp_path: Path) -> tuple[sqlite3.Connection, str]:
    path = str(tmp_path / "wal.db")
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
    return conn, path


def checkpoint_threads() -> set[threading.Thread]:
    """The checkpointing threads running now (the store's, the transcript's, any other)."""
    return {t for t in threading.enumerate() if t.name.startswith("wal-checkpoints")}


def _threads(checkpoints: WalCheckpointer) -> list[threading.Thread]:
    return [t for t in checkpoint_threads() if t.name == f"wal-checkpoints {Path(checkpoints.path).name}"]


async def test_the_writer_never_checkpoints_and_the_thread_does(tmp_path: Path) -> None:
    conn, path = _wal_file(tmp_path)
    lock = WriterLock()
    checkpoints = WalCheckpointer.start(conn, path, lock, every=10)
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    empty = os.path.getsize(path)
    for _ in range(30):
        with lock:
            conn.execute("INSERT INTO t (data) VALUES (?)", (os.urandom(2000),))
        checkpoints.committed()
    await until(lambda: os.path.getsize(path) > empty, "the thread copied the log into the database file")
    checkpoints.stop()
    assert not _threads(checkpoints)
    conn.close()


def _restarts(path: str) -> int:
    """How many times the log started over: its header's checkpoint sequence number."""
    with open(path + "-wal", "rb") as wal:
        return int.from_bytes(wal.read(16)[12:16], "big")


async def test_the_log_starts_over_on_the_thread_not_at_the_writers_next_commit(tmp_path: Path) -> None:
    """The write after a checkpoint that copied the whole log rewinds it and fsyncs its new header."""
    conn, path = _wal_file(tmp_path)
    lock = WriterLock()
    checkpoints = WalCheckpointer.start(conn, path, lock, every=10)
    for _ in range(10):
        with lock:
            conn.execute("INSERT INTO t (data) VALUES (?)", (os.urandom(6000),))
        checkpoints.committed()
    await until(lambda: _restarts(path) == 1, "the log started over with no commit of the writer's")
    checkpoints.stop()
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (10,)
    conn.close()


async def test_the_log_stays_bounded_while_the_writer_never_pauses(tmp_path: Path) -> None:
    """Every checkpoint overlaps a commit, so none copies the whole log and the log never starts over,
    unless the checkpointer holds the writer off for one once the log is past its cap."""
    conn, path = _wal_file(tmp_path)
    lock = WriterLock()
    checkpoints = WalCheckpointer.start(conn, path, lock, every=10, cap=200)
    largest = 0
    for i in range(8000):  # about 3 pages each: 90 MiB of log if it never started over
        with lock:
            conn.execute("INSERT INTO t (data) VALUES (?)", (os.urandom(6000),))
        checkpoints.committed()
        if i % 100 == 0:
            largest = max(largest, os.path.getsize(path + "-wal"))
    checkpoints.stop()
    conn.close()
    assert checkpoints.runs > 0
    assert largest < 5_000 * PAGE, f"the log reached {largest / 2**20:.0f} MiB"


async def test_a_checkpointer_waiting_for_the_writer_lock_has_it_before_the_writer_takes_it_again() -> None:
    """Python's own locks are not fair: a writer that takes its lock again at once took it first through
    hundreds of commits. A thread holding the lock goes on while the checkpointer waits (a nested ``with``)."""
    lock = WriterLock()
    order: list[str] = []

    def checkpointer() -> None:
        assert lock.take_next(timeout=30)
        order.append("checkpointer")
        lock.give_back()

    with lock:
        waiting = threading.Thread(target=checkpointer)
        waiting.start()
        await until(lambda: lock.checkpointer_first, "the checkpointer asked for the lock")
        with lock:
            order.append("nested")
    with lock:  # let go and taken again at once, as a writer in a burst does
        order.append("writer")
    waiting.join()
    assert order == ["nested", "checkpointer", "writer"]
    assert not lock.checkpointer_first


async def test_a_file_held_by_another_connection_is_tried_again_and_not_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conn, path = _wal_file(tmp_path)
    conn.close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")  # holds the file until it closes
    holder.execute("INSERT INTO t (data) VALUES (x'00')")
    lock = WriterLock()
    checkpoints = WalCheckpointer.start(holder, path, lock)
    checkpoints.request()
    await until(lambda: checkpoints.runs == 1, "a checkpoint was tried")
    assert checkpoints.last is None, "it could not run: the file is held"
    holder.close()
    checkpoints.request()
    await until(lambda: checkpoints.last is not None, "the next checkpoint ran")
    checkpoints.stop()
    assert not [r for r in caplog.records if r.name == "acp_relay.sqlite"], "busy is not a failure"


async def test_stopping_ends_the_thread_waiting_for_the_writers_lock(tmp_path: Path) -> None:
    conn, path = _wal_file(tmp_path)
    lock = WriterLock()
    checkpoints = WalCheckpointer.start(conn, path, lock, every=1, cap=1)
    conn.execute("INSERT INTO t (data) VALUES (x'00')")
    with lock:  # as the writer's close holds it
        checkpoints.committed()  # past the cap: the thread wants the lock
        await until(lambda: checkpoints.runs == 1, "a checkpoint was tried")
        checkpoints.stop()
        checkpoints.stop()  # idempotent
    assert not _threads(checkpoints)
    assert not lock.checkpointer_first, "a checkpointer that gave up waiting lets the writer in again"
    with lock:
        conn.execute("INSERT INTO t (data) VALUES (x'01')")
    conn.close()


async def test_a_failing_checkpoint_is_logged_once_and_the_writer_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conn, path = _wal_file(tmp_path)

    def refusing(name: str) -> sqlite3.Connection:  # a real connection whose checkpoints SQLite refuses
        refused = sqlite3.connect(name, isolation_level=None, check_same_thread=False)
        refused.set_authorizer(lambda action, *_: sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_PRAGMA else 0)
        return refused

    lock = WriterLock()
    checkpoints = WalCheckpointer.start(conn, path, lock, every=5, cap=1, connect=refusing)
    for run in (1, 2, 3):
        for _ in range(5):
            with lock:
                conn.execute("INSERT INTO t (data) VALUES (?)", (b"x",))
            checkpoints.committed()
        await until(lambda: checkpoints.runs == run, f"checkpoint {run} was tried")  # noqa: B023 (awaited here)
    with lock:
        conn.execute("INSERT INTO t (data) VALUES (?)", (b"x",))
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (16,)
    checkpoints.stop()
    conn.close()
    logged = [r.getMessage() for r in caplog.records if r.name == "acp_relay.sqlite"]
    assert len(logged) == 1, logged
    assert "wal.db" in logged[0] and "could not be checkpointed (not authorized)" in logged[0]
