"""What each dashboard tab shows, kept in SQLite so a reload or a relay restart shows it again.

One row per message of a tab (the person's own messages and the relay's), in posting order. The
relay edits its messages while an answer streams, so a row is updated in place; a row keeps the
neutral Markdown of what the relay sent and its blocks as the page draws them
(``surfaces.dashboard.render``); a row from before blocks were kept has none, and the page renders
its Markdown.

The file holds at most ``max_tabs`` tabs: when a tab would make one more (a new tab's message, an
answer that ended), the tab used least recently (by its last message added or edited) loses its whole
transcript. A tab whose answer is still running (``answering``) is never evicted and does not count:
more tabs answering at once than ``max_tabs`` must not evict each other mid-answer. Nor does a tab
whose person's message waits for its answer to start (``post_many``): in a burst of more tabs than
``max_tabs``, the new tabs evicted those still waiting for their turn, whose answers then showed
without the question. Each tab's last use is kept in a table of its own, indexed, and the tabs not
answering are counted, so finding the tabs to evict reads only those rows of the index, however many
tabs and messages the file holds. A turn starting or ending writes nothing: which tabs answer is known
in memory (a new run answers nothing yet), and the marks changed since are written to the index, in
bulk, in the transaction that evicts, before it reads it; the uses of tabs already kept are held in
memory the same way. Which tabs the index holds is remembered too (``_known``, a bounded memory of what
the index was seen to hold): a message of a tab already kept (an answer's first words) is then one
statement, and a turn starting or ending reads nothing. The file also keeps the files the relay posted
in a tab (the rest of an answer too long to show), for download.

The file's write-ahead log is checkpointed on a thread of its own (``WalCheckpointer``), so no
commit on the event loop waits for the fsyncs.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from core.surface_api import SQLITE_COMPANIONS, Button, WalCheckpointer, WriterLock, private_file

__all__ = ["Edit", "Entry", "Transcript"]

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
#: breaks ties within one clock tick. ``answering`` is written late (``Transcript._marks``): it is exact
#: only when the index is read to evict.
_TABS = """
CREATE TABLE IF NOT EXISTS tabs (
    tab TEXT PRIMARY KEY, used_at REAL NOT NULL, touch INTEGER NOT NULL, answering INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tabs_by_use ON tabs (answering, used_at, touch);
"""
#: A file written before the tabs table: its tabs, from their messages (once).
_TABS_FROM_MESSAGES = ("INSERT OR IGNORE INTO tabs (tab, used_at, touch)"
                       " SELECT tab, MAX(updated_at), MAX(seq) FROM messages GROUP BY tab")
_NEW_TAB = "INSERT OR IGNORE INTO tabs (tab, used_at, touch, answering) VALUES (?, ?, ?, ?)"
#: Uses of tabs already kept, and marks of tabs answering, held in memory before they are written.
_USES_HELD = 256
#: Tabs remembered as held by the index (``Transcript._known``); past it the memory starts over.
_KNOWN_HELD = 4096
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


class Edit(NamedTuple):
    """A message's new content (``Transcript.update_many``)."""

    tab: str
    message_id: str
    text: str
    buttons: tuple[Button, ...] = ()
    plain: bool = False
    blocks: tuple[dict[str, Any], ...] = ()


def _buttons_json(buttons: tuple[Button, ...]) -> str:
    # Most messages have none: "[]" without calling the encoder (a person's message, every streamed edit).
    return json.dumps([[b.label, b.token, b.style] for b in buttons]) if buttons else "[]"


def _blocks_json(blocks: tuple[dict[str, Any], ...]) -> str:
    return json.dumps(blocks) if blocks else "[]"


def _buttons(raw: str) -> tuple[Button, ...]:
    return tuple(Button(label, token, style) for label, token, style in json.loads(raw))


class Transcript:
    """The messages of every tab in one SQLite file (WAL). Safe to share between threads."""

    def __init__(self, conn: sqlite3.Connection, path: str, max_tabs: int | None = None) -> None:
        """Wrap an open connection; use :meth:`Transcript.open`."""
        self._conn = conn
        self._lock = WriterLock()  # the checkpointer's (``WalCheckpointer``) to take next when it must
        self.path = path
        self.max_tabs = max_tabs
        self._answering: set[str] = set()  # tabs whose answer runs now, or waits to (``_waiting``)
        #: Tabs whose person's message waits for its answer to start (``post_many``): answering already.
        self._waiting: set[str] = set()
        #: Tabs whose answer started or ended since the tabs table last had their mark, by their mark
        #: now; None after a rollback, when any mark in the table may be stale.
        self._marks: dict[str, bool] | None = {}
        self._quiet = 0  # rows of tabs not answering (read at open, then counted here)
        #: Each kept tab's last use not yet written to the tabs table: a message or an edit (one per
        #: streamed update) then writes its message only, and the uses are written before they are read
        #: (``_prune``), in bulk.
        self._uses: dict[str, tuple[float, int]] = {}
        self._touch = 0
        #: Tabs the index holds, as far as this run saw (a subset: a tab missing is looked up). A tab
        #: leaves it when its row is deleted, and all leave on a rollback (a row inserted may be undone).
        self._known: set[str] = set()
        self._checkpoints: WalCheckpointer | None = None  # none in memory

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
            transcript._count_quiet()
            transcript._prune()
        if name != ":memory:":
            transcript._checkpoints = WalCheckpointer.start(conn, name, transcript._lock, owner=transcript)
        return transcript

    def close(self) -> None:
        """Close the connection; idempotent."""
        if self._checkpoints is not None:
            self._checkpoints.stop()  # first: the file's last connection to close checkpoints it (this one)
        with self._lock:
            with contextlib.suppress(sqlite3.Error):  # closed already
                self._note_uses()
            self._conn.close()

    def add(self, tab: str, role: Role, text: str, *, buttons: tuple[Button, ...] = (), plain: bool = False,
            blocks: tuple[dict[str, Any], ...] = (), message_id: str | None = None) -> Entry | None:
        """Append a message; returns it, or None when ``message_id`` is already in this tab. The relay's
        message in a tab waiting for its answer (a command's answer: no turn started) ends the wait."""
        return self.add_many([(tab, Entry(message_id or uuid.uuid4().hex, role, text, buttons, plain, blocks))])[0]

    def post_many(self, posted: Sequence[tuple[str, Entry]]) -> list[Entry | None]:
        """``add_many`` of the person's messages: each tab written to waits for its answer from now on,
        and counts as answering until its answer starts and ends (``answering``) or the relay writes in
        it without one (a command's answer). A resend (None) changes nothing."""
        return self.add_many(posted, waiting=True)

    def add_many(self, posted: Sequence[tuple[str, Entry]], *, waiting: bool = False,
                 rewrite: bool = False) -> list[Entry | None]:
        """Append messages, each ``(tab, entry)``, in one transaction (one commit for the lot); each comes
        back, or None when its id is already in its tab (``rewrite``: that message is then rewritten with
        the entry, in its place). The tabs beyond ``max_tabs`` go once all are in, the same tabs as adding
        them one at a time makes go. ``waiting``: see ``post_many``. A message is rewritten only once its
        insert found the id taken: appending costs the same either way."""
        with self._lock:
            if len(posted) == 1 and not waiting:
                tab, entry = posted[0]
                if tab in self._known and tab not in self._waiting:  # one statement: a transaction of its own
                    now = time.time()
                    written, _ = self._insert(tab, entry, now)
                    if written or (rewrite and self._rewrite(tab, entry, now)):
                        self._committed()
                    return [entry if written else None]
            with self._transaction():
                return self._insert_all(posted, waiting, rewrite)

    def _rewrite(self, tab: str, entry: Entry, now: float) -> bool:
        """Write ``entry`` over the message of its id (lock held); whether there was one."""
        return self._update(Edit(tab, entry.id, entry.text, entry.buttons, entry.plain, entry.blocks), now) is not None

    def _insert_all(self, posted: Sequence[tuple[str, Entry]], waiting: bool, rewrite: bool) -> list[Entry | None]:
        """``add_many`` (lock held, in a transaction)."""
        added: list[Entry | None] = []
        marked: list[str] = []  # tabs that wait from now
        now, counted = time.time(), False  # counted: a tab more may count toward max_tabs
        try:
            for tab, entry in posted:
                written, new = self._insert(tab, entry, now)
                if not written and rewrite:
                    self._rewrite(tab, entry, now)
                added.append(entry if written else None)
                if written and waiting and tab not in self._answering:  # (a resend changes nothing)
                    self._waiting.add(tab)
                    self._mark(tab, True)
                    marked.append(tab)
                elif written and not waiting and tab in self._waiting:  # answered without a turn
                    self._waiting.discard(tab)
                    self._mark(tab, False)
                    counted = True
                counted = counted or new
            if counted:
                self._prune()
        except BaseException:  # not written: none of them waits (the rollback counts the tabs again)
            self._waiting.difference_update(marked)
            self._answering.difference_update(marked)
            raise
        return added

    def _insert(self, tab: str, entry: Entry, now: float) -> tuple[bool, bool]:
        """Write one message (lock held, in a transaction): whether it was (not a known id), and whether
        its tab is one the file did not hold yet."""
        cur = self._conn.execute(
            "INSERT OR IGNORE INTO messages (tab, id, role, text, buttons, plain, blocks, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (tab, entry.id, entry.role, entry.text, _buttons_json(entry.buttons), int(entry.plain),
             _blocks_json(entry.blocks), now))
        if cur.rowcount != 1:
            return False, False
        return True, self._used(tab, now)

    def update(self, tab: str, message_id: str, text: str, *, buttons: tuple[Button, ...] = (),
               plain: bool = False, blocks: tuple[dict[str, Any], ...] = ()) -> Entry | None:
        """Replace a message's content; returns it, or None when there is no such message."""
        return self.update_many([Edit(tab, message_id, text, buttons, plain, blocks)])[0]

    def update_many(self, edits: Sequence[Edit]) -> list[Entry | None]:
        """``update`` each of ``edits`` in turn, in one transaction (one commit for the lot); each comes back,
        or None where there is no such message."""
        if len(edits) == 1:  # one statement: a transaction of its own already
            with self._lock:
                entry = self._update(edits[0], time.time())
                if entry is not None:  # committed (several commit in ``_transaction``, which counts them)
                    self._committed()
                return [entry]
        with self._lock, self._transaction():
            now = time.time()
            return [self._update(edit, now) for edit in edits]

    def _update(self, edit: Edit, now: float) -> Entry | None:
        """Write one edit (lock held)."""
        tab, message_id, text, buttons, plain, blocks = edit
        rows = self._conn.execute(
            "UPDATE messages SET text = ?, buttons = ?, plain = ?, blocks = ?, updated_at = ?"
            " WHERE tab = ? AND id = ? RETURNING role",
            (text, _buttons_json(buttons), int(plain), _blocks_json(blocks), now, tab, message_id)).fetchall()
        if not rows:
            return None
        self._hold_use(tab, now)
        return Entry(message_id, rows[0][0], text, buttons, plain, blocks)

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
            self._committed()
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
                self._marks = None  # the marks written in it are undone: write them all next time
                self._known.clear()  # so may be the rows of new tabs
                self._conn.execute("ROLLBACK")
                self._count_quiet()
            raise
        self._conn.execute("COMMIT")
        self._committed()

    def _committed(self) -> None:
        """A write committed (lock held): count it toward the next checkpoint."""
        if self._checkpoints is not None:
            self._checkpoints.committed()

    def _count_quiet(self) -> None:
        """Count the rows of tabs not answering from the file (lock held): at open, after a rollback."""
        (rows,) = self._conn.execute("SELECT COUNT(*) FROM tabs").fetchone()
        self._quiet = rows - sum(self._kept(tab) for tab in self._answering)

    def _kept(self, tab: str) -> bool:
        """The file holds the tab (lock held)."""
        if tab in self._known:
            return True
        if self._conn.execute("SELECT 1 FROM tabs WHERE tab = ?", (tab,)).fetchone() is None:
            return False
        self._know(tab)
        return True

    def _know(self, tab: str) -> None:
        """Remember that the index holds the tab (lock held)."""
        if len(self._known) >= _KNOWN_HELD:
            self._known.clear()
        self._known.add(tab)

    def _used(self, tab: str, now: float) -> bool:
        """Note the tab's use (lock held); True when it is a tab the file did not hold yet."""
        if tab not in self._known:
            answering = tab in self._answering
            new = self._conn.execute(_NEW_TAB, (tab, now, self._touch + 1, int(answering))).rowcount == 1
            self._know(tab)
            if new:
                if self._marks is not None:  # its row is written with its mark
                    self._marks.pop(tab, None)
                self._touch += 1
                self._quiet += not answering
                return True
        self._hold_use(tab, now)
        return False

    def _hold_use(self, tab: str, now: float) -> None:
        """Note a kept tab's use in memory (lock held); written with the others once many are held."""
        self._touch += 1
        self._uses[tab] = (now, self._touch)
        if len(self._uses) < _USES_HELD:
            return
        if self._conn.in_transaction:  # a message's: its change and these uses commit together
            self._note_uses()
        else:
            with self._transaction():
                self._note_uses()

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
            self._known.discard(tab)
            if self._marks is not None:  # its row goes: a new one is written with its mark
                self._marks.pop(tab, None)
            self._conn.execute("DELETE FROM messages WHERE tab = ?", (tab,))
            self._conn.execute("DELETE FROM files WHERE tab = ?", (tab,))
            gone = self._conn.execute("DELETE FROM tabs WHERE tab = ?", (tab,)).rowcount
            self._quiet -= gone and tab not in self._answering

    def answering(self, tab: str, active: bool) -> None:
        """The tab's answer runs (``active``) or ended: while it runs the tab is never evicted and does not
        count toward ``max_tabs``; once it ended, the tabs beyond ``max_tabs`` go."""
        with self._lock:
            self._waiting.discard(tab)  # it started (or ended): it waits no more
            self._mark(tab, active)
            if not active:
                self._prune()

    def _mark(self, tab: str, active: bool) -> None:
        """The tab answers (``active``) or not, from now (lock held)."""
        if active != (tab in self._answering):
            (self._answering.add if active else self._answering.discard)(tab)
            self._hold_mark(tab, active)
            if self._kept(tab):
                self._quiet += -1 if active else 1

    def _hold_mark(self, tab: str, active: bool) -> None:
        """Note the tab's mark in memory (lock held); written with the others once many are held. Without
        ``max_tabs`` nothing is evicted and the marks are never read: none is kept."""
        if self.max_tabs is None or self._marks is None:  # None: all of them are written next time
            return
        if self._marks.pop(tab, None) is not None:  # changed back: the index holds this mark already
            return
        self._marks[tab] = active
        if len(self._marks) < _USES_HELD:
            return
        if self._conn.in_transaction:  # a message's: its change and these marks commit together
            self._note_marks()
        else:
            with self._transaction():
                self._note_marks()

    def _prune(self) -> None:
        """Drop the transcripts of the tabs beyond ``max_tabs`` not answering, least recently used first
        (lock held)."""
        if self.max_tabs is None or self._quiet <= self.max_tabs:
            return
        if not self._conn.in_transaction:
            with self._transaction():
                self._evict(self._quiet - self.max_tabs)
        else:
            self._evict(self._quiet - self.max_tabs)

    def _evict(self, count: int) -> None:
        """Drop the ``count`` tabs not answering used least recently (lock held, in a transaction).

        The uses and marks held in memory are written first: the index then reads only the rows that go.
        """
        self._note_uses()
        self._note_marks()
        rows = self._conn.execute("SELECT tab FROM tabs WHERE answering = 0 ORDER BY used_at, touch LIMIT ?",
                                  (count,)).fetchall()
        self._forget([tab for (tab,) in rows])

    def _note_marks(self) -> None:
        """Write the marks of the tabs whose answer started or ended since (lock held, in a transaction)."""
        if self._marks is None:  # after a rollback: every mark
            self._conn.execute("UPDATE tabs SET answering = 0 WHERE answering = 1")
            self._marks = dict.fromkeys(self._answering, True)
        if self._marks:
            self._conn.executemany("UPDATE tabs SET answering = ? WHERE tab = ?",
                                   [(int(active), tab) for tab, active in self._marks.items()])
            self._marks.clear()

    def entries(self, tab: str) -> list[Entry]:
        """The tab's messages in posting order."""
        with self._lock:
            rows = self._conn.execute(f"{_SELECT} WHERE tab = ? ORDER BY seq", (tab,)).fetchall()
        return [Entry.of(row) for row in rows]
