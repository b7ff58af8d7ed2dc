"""A store whose disk is full, in-process: SQLite's ``max_page_count`` capped at the file's size and
its free pages filled, so a write that needs a new page fails with SQLITE_FULL ("database or disk is
full"), the error SQLite gives for a full disk. A write that fits in a page already there still
succeeds, as on a full disk; ``LONG_TEXT`` never fits. And a store another writer holds (``locked``),
where every write fails (SQLITE_BUSY once the busy timeout passes), a repeat's too."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from core.store import Store, StoreError

__all__ = ["LONG_TEXT", "fill", "fill_file", "locked", "make_room", "make_room_in_file"]

#: Longer than a page: writing it needs pages the full file cannot have.
LONG_TEXT = "hello " + "x" * 6000
_UNCAPPED = 1073741823  # SQLite's default max_page_count


def fill(store: Store) -> None:
    """Leave the store's file no room."""
    backend = store.backend
    backend.execute("CREATE TABLE filler (data BLOB)")
    [(pages,)] = backend.execute("PRAGMA page_count").rows
    backend.execute(f"PRAGMA max_page_count = {pages}")
    for size in (2000, 200, 20):
        try:
            for _ in range(10_000):
                backend.execute(f"INSERT INTO filler VALUES (zeroblob({size}))")
        except StoreError:
            continue
        raise AssertionError("the store never filled up")


def make_room(store: Store) -> None:
    """Room again: the filler gone, the cap lifted."""
    store.backend.execute("DROP TABLE filler")
    store.backend.execute(f"PRAGMA max_page_count = {_UNCAPPED}")


def fill_file(conn: sqlite3.Connection) -> None:
    """``fill`` for a SQLite file a surface keeps itself (the dashboard's transcript), on its connection."""
    conn.execute("CREATE TABLE filler (data BLOB)")
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")
    for size in (2000, 200, 20):
        try:
            for _ in range(10_000):
                conn.execute(f"INSERT INTO filler VALUES (zeroblob({size}))")
        except sqlite3.OperationalError:
            continue
        raise AssertionError("the file never filled up")


def make_room_in_file(conn: sqlite3.Connection) -> None:
    """``make_room`` for ``fill_file``'s file."""
    conn.execute("DROP TABLE filler")
    conn.execute(f"PRAGMA max_page_count = {_UNCAPPED}")


@contextlib.contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Another writer holds the SQLite file at ``path`` while the block runs."""
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
