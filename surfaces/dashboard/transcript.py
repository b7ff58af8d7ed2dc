"""What each dashboard tab shows, kept in SQLite so a reload or a relay restart shows it again.

One row per message of a tab (the person's own messages and the relay's), in posting order. The
relay edits its messages while an answer streams, so a row is updated in place; a row keeps the
neutral Markdown of what the relay sent and its blocks as the page draws them
(``surfaces.dashboard.render``); a row from before blocks were kept has none, and the page renders
its Markdown.

The file holds at most ``max_tabs`` tabs: when a new tab's first message would make one more, the
tab used least recently (by its last message added or edited) loses its whole transcript. A tab whose
answer is still running (``answering``) is never evicted and does not count: more tabs answering at
once than ``max_tabs`` must not evict each other mid-answer. Each tab's last use is kept in a table of
its own, indexed, and the tabs not answering are counted, so finding the tabs to evict reads only
those rows of the index, however many tabs and messages the file holds. The file also keeps the
files the relay posted in a tab (the rest of an answer too long to show), for download.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from core.surface_api import SQLITE_COMPANIONS, Button, private_file

__all__ = ["Entry", "Transcript"]

Role = Literal["agent", "user"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tab TEXT NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    buttons TEXT NOT NULL DEFAULT '[]',
    plain INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL,
    blocks TEXT NOT NULL DEFAULT '[]',
    UNIQUE (tab, id)
)
"""
#: A transcript written before blocks were kept gains the column (its rows have none).
_ADD_BLOCKS = "ALTER TABLE messages ADD COLUMN blocks TEXT NOT NULL DEFAULT '[]'"
_FILES = """
CREATE TABLE IF NOT EXISTS files (
    tab TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (tab, id)
)
"""
#: Every tab with a message, by its last use (a message added or edited); ``touch`` counts uses, so it
#: breaks ties within one clock tick.
_TABS = """
CREATE TABLE IF NOT EXISTS tabs (
    tab TEXT PRIMARY KEY, used_at REAL NOT NULL, touch INTEGER NOT NULL, answering INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tabs_by_use ON tabs (answering, used_at, touch);
"""
#: A file written before the tabs table: its tabs, from their messages (once).
_TABS_FROM_MESSAGES = ("INSERT OR IGNORE INTO tabs (tab, used_at, touch)"
                       " SELECT tab, MAX(updated_at), MAX(seq) FROM messages GROUP BY tab")
_USED = ("INSERT INTO tabs (tab, used_at, touch, answering) VALUES (?, ?, ?, ?)"
         " ON CONFLICT (tab) DO UPDATE SET used_at = excluded.used_at, touch = excluded.touch")
_QUIET = "SELECT COUNT(*) FROM tabs WHERE answering = 0"
#: Edited tabs whose use is held in memory before it is written (``Transcript._uses``).
_USES_HELD = 256
_SELECT = "SELECT id, role, text, buttons, plain, blocks FROM messages"


@dataclass(frozen=True, slots=True)
class Entry:
    """One message as the browser shows it."""

    id: str
    role: Role
    text: str
    buttons: tuple[Button, ...] = ()
    plain: bool = False
    #: The blocks as the page draws them (``surfaces.dashboard.render``); none: render ``text``.
    blocks: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``message`` event the browser receives."""
        return {"type": "message", "id": self.id, "role": self.role, "text": self.text, "plain": self.plain,
                "blocks": list(self.blocks),
                "buttons": [{"label": b.label, "token": b.token, "style": b.style} for b in self.buttons]}

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> Entry:
        """An entry from a row of ``_SELECT``."""
        ident, role, text, buttons, plain, blocks = row
        return cls(ident, role, text, _buttons(buttons), bool(plain), tuple(json.loads(blocks)))


def _buttons_json(buttons: tuple[Button, ...]) -> str:
    return json.dumps([[b.label, b.token, b.style] for b in buttons])


def _buttons(raw: str) -> tuple[Button, ...]:
    return tuple(Button(label, token, style) for label, token, style in json.loads(raw))


class Transcript:
    """The messages of every tab in one SQLite file (WAL). Safe to share between threads."""

    def __init__(self, conn: sqlite3.Connection, path: str, max_tabs: int | None = None) -> None:
        """Wrap an open connection; use :meth:`Transcript.open`."""
        self._conn = conn
        self._lock = threading.Lock()
        self.path = path
        self.max_tabs = max_tabs
        self._answering: set[str] = set()  # tabs whose answer runs now (a new row of one is marked)
        self._quiet = 0  # rows of tabs not answering (read at open, then counted here)
        #: Each tab's last edit not yet written to the tabs table: an edit (one per streamed update) then
        #: writes its message only, and the uses are written before they are read (``_prune``), in bulk.
        self._uses: dict[str, tuple[float, int]] = {}
        self._touch = 0

    @classmethod
    def open(cls, path: str | Path, *, max_tabs: int | None = None) -> Transcript:
        """Open (creating if needed) the transcript at ``path``; ``":memory:"`` for tests.

        With ``max_tabs``, the tabs beyond it (a lower bound than last time) are pruned at once.
        """
        name = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        if name != ":memory:":
            private_file(Path(name), SQLITE_COMPANIONS)  # every prompt and answer: the owner's alone
        conn = sqlite3.connect(name, timeout=5.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            if "blocks" not in {column[1] for column in conn.execute("PRAGMA table_info(messages)")}:
                conn.execute(_ADD_BLOCKS)
            conn.execute(_FILES)
            had_tabs = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tabs'").fetchone() is not None
            conn.executescript(_TABS)
            if not had_tabs:
                conn.execute(_TABS_FROM_MESSAGES)
            conn.execute("UPDATE tabs SET answering = 0 WHERE answering = 1")  # a new run answers nothing yet
            conn.execute("DELETE FROM files WHERE tab NOT IN (SELECT tab FROM tabs)")
        except BaseException:
            conn.close()
            raise
        transcript = cls(conn, name, max_tabs)
        with transcript._lock:
            (transcript._touch,) = conn.execute("SELECT COALESCE(MAX(touch), 0) FROM tabs").fetchone()
            (transcript._quiet,) = conn.execute(_QUIET).fetchone()
            transcript._prune()
        return transcript

    def close(self) -> None:
        """Close the connection; idempotent."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):  # closed already
                self._note_uses()
            self._conn.close()

    def add(self, tab: str, role: Role, text: str, *, buttons: tuple[Button, ...] = (), plain: bool = False,
            blocks: tuple[dict[str, Any], ...] = (), message_id: str | None = None) -> Entry | None:
        """Append a message; returns it, or None when ``message_id`` is already in this tab."""
        entry = Entry(message_id or uuid.uuid4().hex, role, text, buttons, plain, blocks)
        with self._lock, self._transaction():
            now = time.time()
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO messages (tab, id, role, text, buttons, plain, blocks, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (tab, entry.id, role, text, _buttons_json(buttons), int(plain), json.dumps(blocks), now))
            if cur.rowcount == 1 and self._used(tab, now):
                self._prune()
        return entry if cur.rowcount == 1 else None

    def update(self, tab: str, message_id: str, text: str, *, buttons: tuple[Button, ...] = (),
               plain: bool = False, blocks: tuple[dict[str, Any], ...] = ()) -> Entry | None:
        """Replace a message's content; returns it, or None when there is no such message."""
        with self._lock:
            now = time.time()
            cur = self._conn.execute(
                "UPDATE messages SET text = ?, buttons = ?, plain = ?, blocks = ?, updated_at = ?"
                " WHERE tab = ? AND id = ?",
                (text, _buttons_json(buttons), int(plain), json.dumps(blocks), now, tab, message_id))
            if cur.rowcount != 1:
                return None
            self._touch += 1
            self._uses[tab] = (now, self._touch)
            if len(self._uses) >= _USES_HELD:
                with self._transaction():
                    self._note_uses()
            (role,) = self._conn.execute("SELECT role FROM messages WHERE tab = ? AND id = ?",
                                         (tab, message_id)).fetchone()
        return Entry(message_id, role, text, buttons, plain, blocks)

    def get(self, tab: str, message_id: str) -> Entry | None:
        """One message, or None."""
        with self._lock:
            row = self._conn.execute(f"{_SELECT} WHERE tab = ? AND id = ?", (tab, message_id)).fetchone()
        return None if row is None else Entry.of(row)

    def delete(self, tab: str, message_id: str) -> bool:
        """Remove a message; False when there was none."""
        with self._lock, self._transaction():
            cur = self._conn.execute("DELETE FROM messages WHERE tab = ? AND id = ?", (tab, message_id))
            if cur.rowcount == 1 and self._conn.execute("SELECT 1 FROM messages WHERE tab = ? LIMIT 1",
                                                        (tab,)).fetchone() is None:
                self._forget([tab])  # its last message: the tab no longer counts
        return cur.rowcount == 1

    def add_file(self, tab: str, name: str, data: bytes) -> str:
        """Keep a file for the tab (the rest of a long answer); returns its id."""
        file_id = uuid.uuid4().hex
        with self._lock:
            self._conn.execute("INSERT INTO files (tab, id, name, data) VALUES (?, ?, ?, ?)",
                               (tab, file_id, name, data))
        return file_id

    def file(self, tab: str, file_id: str) -> tuple[str, bytes] | None:
        """A file of the tab: (name, data), or None."""
        with self._lock:
            row = self._conn.execute("SELECT name, data FROM files WHERE tab = ? AND id = ?",
                                     (tab, file_id)).fetchone()
        return None if row is None else (str(row[0]), bytes(row[1]))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """A message and its tab's row change together (lock held); on a failure the count is read again."""
        self._conn.execute("BEGIN")
        try:
            yield
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # the first error is the one to report
                self._conn.execute("ROLLBACK")
                (self._quiet,) = self._conn.execute(_QUIET).fetchone()
            raise
        self._conn.execute("COMMIT")

    def _used(self, tab: str, now: float) -> bool:
        """Note the tab's use (lock held); True when it is a tab the file did not hold yet."""
        new = self._conn.execute("SELECT 1 FROM tabs WHERE tab = ?", (tab,)).fetchone() is None
        self._uses.pop(tab, None)  # this use is later
        self._touch += 1
        self._conn.execute(_USED, (tab, now, self._touch, int(tab in self._answering)))
        self._quiet += new and tab not in self._answering
        return new

    def _note_uses(self) -> None:
        """Write the held uses of edited tabs (lock held)."""
        if self._uses:
            self._conn.executemany("UPDATE tabs SET used_at = ?, touch = ? WHERE tab = ?",
                                   [(at, touch, tab) for tab, (at, touch) in self._uses.items()])
            self._uses.clear()

    def _forget(self, tabs: list[str]) -> None:
        """Drop these tabs' messages, files and their row (lock held)."""
        for tab in tabs:
            self._uses.pop(tab, None)
            self._conn.execute("DELETE FROM messages WHERE tab = ?", (tab,))
            self._conn.execute("DELETE FROM files WHERE tab = ?", (tab,))
            self._quiet -= self._conn.execute("DELETE FROM tabs WHERE tab = ? AND answering = 0", (tab,)).rowcount
            self._conn.execute("DELETE FROM tabs WHERE tab = ?", (tab,))

    def answering(self, tab: str, active: bool) -> None:
        """The tab's answer runs (``active``) or ended: while it runs the tab is never evicted and does not
        count toward ``max_tabs``; once it ended, the tabs beyond ``max_tabs`` go."""
        with self._lock, self._transaction():
            if active:
                self._answering.add(tab)
            else:
                self._answering.discard(tab)
            changed = self._conn.execute("UPDATE tabs SET answering = ? WHERE tab = ? AND answering = ?",
                                         (int(active), tab, int(not active))).rowcount
            self._quiet += -changed if active else changed
            if not active:
                self._prune()

    def _prune(self) -> None:
        """Drop the transcripts of the tabs beyond ``max_tabs`` not answering, least recently used first
        (lock held)."""
        if self.max_tabs is not None and self._quiet > self.max_tabs:
            self._note_uses()
            rows = self._conn.execute("SELECT tab FROM tabs WHERE answering = 0 ORDER BY used_at, touch LIMIT ?",
                                      (self._quiet - self.max_tabs,)).fetchall()
            self._forget([tab for (tab,) in rows])

    def entries(self, tab: str) -> list[Entry]:
        """The tab's messages in posting order."""
        with self._lock:
            rows = self._conn.execute(f"{_SELECT} WHERE tab = ? ORDER BY seq", (tab,)).fetchall()
        return [Entry.of(row) for row in rows]
