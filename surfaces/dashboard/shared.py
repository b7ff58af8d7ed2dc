"""What each dashboard tab shows, kept in the store every relay shares (PostgreSQL), so a tab served by
any relay shows what the conversation's owner posted.

The same calls as ``Transcript`` (the SQLite file of a relay alone), over the surface's state in the
store (``Host.state``): one key per message, ``m:<tab>:<id>``, holding its content and when it was
first posted (nanoseconds: a tab's messages are read in that order), and one key per file,
``f:<tab>:<id>``. Tab and message ids never hold a ``:``, so a tab's prefix is its messages alone.

The messages of one tab come from the relay that owns its conversation (the answers) and from the
relays its browser tabs post to (the person's messages, posted before they are handed over): their
order relies on the relays' clocks agreeing to within the time an answer takes to start (keep them
synchronised, NTP).

Past ``max_tabs``, the tab used least recently loses its whole transcript, as in the SQLite file: each
tab has a key ``t:<tab>:`` saying when it was last used (a message added, or edited outside an answer,
or its answer ended), since when its answer runs, if it does, and since when the person's message
waits for its answer to start, if it does (the relay it was posted to marks it; whichever relay owns
the conversation ends the wait, as its answer starts, or with a reply that is no answer, a command's).
A tab answering or waiting is never evicted and does not count (in a burst of more tabs than
``max_tabs``, a question evicted before its answer began lost the tab's transcript); a mark older
than ``ANSWERING_HELD_S`` is a dead relay's (killed mid-answer) and no longer counts. Any relay evicts
when one of its tabs gets its first message, its answer ends or its wait ends without one: it reads
the tabs' keys (a range of the index, not their messages) and removes what the tabs it evicts held
when it looked (a message written since stays).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from core.surface_api import Button, SurfaceState
from surfaces.dashboard.transcript import Edit, Entry, Role

__all__ = ["SharedTranscript"]

#: ``SurfaceState.prune`` with this age forgets a key whatever its time (there is no single delete).
_ANY_AGE_S = -10 * 365 * 86400.0
_POSTED_HELD = 1024
#: An answer marked running longer than this belongs to a relay that died mid-answer (no turn runs so long).
ANSWERING_HELD_S = 86400.0


def _message_key(tab: str, message_id: str) -> str:
    return f"m:{tab}:{message_id}"


def _tab_key(tab: str) -> str:
    return f"t:{tab}:"


class SharedTranscript:
    """The messages of every tab as keys of the surface's shared state. Safe to share between threads."""

    def __init__(self, state: SurfaceState, max_tabs: int | None = None, *,
                 clock: Callable[[], int] = time.time_ns) -> None:
        """``max_tabs``: the tabs kept (None: all); ``clock``: now, in nanoseconds since 1970."""
        self._state = state
        self.max_tabs = max_tabs
        self._clock = clock
        self._answering: set[str] = set()  # tabs whose answer runs on this relay
        self._lock = threading.Lock()
        self._last = 0
        #: When each message this relay wrote lately was posted, and by whom: a streamed edit (several a
        #: second) then writes without reading first. A message another relay posted is read once.
        self._posted: OrderedDict[str, tuple[int, Role]] = OrderedDict()
        #: Where the transcript is (the ``Transcript`` attribute of the same name).
        self.path = "the shared store"
        self._adopt()

    def _adopt(self) -> None:
        """A store from before tabs were counted: each tab's key, from its messages (once); then the tabs
        beyond ``max_tabs`` go, as a lower bound than last time makes them go."""
        if self.max_tabs is None:
            return
        if not self._state.items("t:"):
            last: dict[str, int] = {}
            for key, raw in self._state.items("m:").items():
                tab = key.split(":")[1]
                last[tab] = max(last.get(tab, 0), int(json.loads(raw)["at"]))
            for tab, at in last.items():
                self._state.set(_tab_key(tab), json.dumps({"used": at, "answering": 0}))
        self._evict()

    def close(self) -> None:
        """Nothing to close: the store is the relay's."""

    def _posted_at(self) -> int:
        """Now, in nanoseconds, after every message this relay posted before."""
        with self._lock:
            self._last = max(self._clock(), self._last + 1)
            return self._last

    def _write(self, tab: str, entry: Entry, at: int) -> None:
        key = _message_key(tab, entry.id)
        with self._lock:
            self._posted[key] = (at, entry.role)
            self._posted.move_to_end(key)
            if len(self._posted) > _POSTED_HELD:
                self._posted.popitem(last=False)
        self._state.set(key, json.dumps(
            {"at": at, "role": entry.role, "text": entry.text, "plain": entry.plain, "blocks": list(entry.blocks),
             "buttons": [[b.label, b.token, b.style] for b in entry.buttons]}))

    def add(self, tab: str, role: Role, text: str, *, buttons: tuple[Button, ...] = (), plain: bool = False,
            blocks: tuple[dict[str, Any], ...] = (), message_id: str | None = None) -> Entry | None:
        """Append a message; returns it, or None when ``message_id`` is already in this tab."""
        return self._add(tab, Entry(message_id or uuid.uuid4().hex, role, text, buttons, plain, blocks),
                         fresh_id=message_id is None)

    def _add(self, tab: str, entry: Entry, *, fresh_id: bool = False, waiting: bool = False) -> Entry | None:
        """``add``; ``waiting``: the person's message, whose tab waits for its answer from now (unless an
        answer runs in it). A relay's message in a tab waiting, with no answer running here, is a reply
        that is no answer (a command's): the wait ends."""
        if not fresh_id and self._state.get(_message_key(tab, entry.id)) is not None:
            return None
        known, now = self._state.get(_tab_key(tab)), self._clock()
        marks = _marks(known)
        self._write(tab, entry, self._posted_at())
        if waiting:  # a message sent while an answer runs is answered after it, without waiting out of line
            self._used(tab, marks, waiting=None if _marked(marks, "answering", now) else True)
            counts = known is None
        else:
            here = tab in self._answering
            self._used(tab, marks, waiting=None if here else False)
            # a tab that waited counts again, as a new one does
            counts = known is None or (not here and _marked(marks, "waiting", now))
        if counts:
            self._evict()
        return entry

    def add_many(self, posted: Sequence[tuple[str, Entry]], *, rewrite: bool = False) -> list[Entry | None]:
        """``add`` each ``(tab, entry)`` in turn (the store's writes are its own); ``rewrite``: a message whose
        id is already in its tab is rewritten with the entry, in its place (and None comes back for it)."""
        added = [self._add(tab, entry) for tab, entry in posted]
        for (tab, entry), new in zip(posted, added, strict=True):
            if new is None and rewrite:
                self.update(tab, entry.id, entry.text, buttons=entry.buttons, plain=entry.plain, blocks=entry.blocks)
        return added

    def post_many(self, posted: Sequence[tuple[str, Entry]]) -> list[Entry | None]:
        """The person's messages (``add_many``): each tab written to waits for its answer from now on, and
        is held past ``max_tabs`` until its answer starts, on whichever relay owns the conversation, or
        that relay replies without one. A resend (None) changes nothing."""
        return [self._add(tab, entry, waiting=True) for tab, entry in posted]

    def update(self, tab: str, message_id: str, text: str, *, buttons: tuple[Button, ...] = (),
               plain: bool = False, blocks: tuple[dict[str, Any], ...] = ()) -> Entry | None:
        """Replace a message's content; returns it, or None when there is no such message."""
        with self._lock:
            posted = self._posted.get(_message_key(tab, message_id))
        if posted is None:
            raw = self._state.get(_message_key(tab, message_id))
            if raw is None:
                return None
            data = json.loads(raw)
            posted = int(data["at"]), data["role"]
        at, role = posted
        entry = Entry(message_id, role, text, buttons, plain, blocks)
        self._write(tab, entry, at)
        if tab not in self._answering:  # a streamed edit is no use of its own: the answer's end is
            self._used(tab, _marks(self._state.get(_tab_key(tab))))
        return entry

    def update_many(self, edits: Sequence[Edit]) -> list[Entry | None]:
        """``update`` each of ``edits`` in turn (the store's writes are its own)."""
        return [self.update(e.tab, e.message_id, e.text, buttons=e.buttons, plain=e.plain, blocks=e.blocks)
                for e in edits]

    def get(self, tab: str, message_id: str) -> Entry | None:
        """One message, or None."""
        raw = self._state.get(_message_key(tab, message_id))
        return None if raw is None else _entry(message_id, json.loads(raw))

    def delete(self, tab: str, message_id: str) -> bool:
        """Remove a message; False when there was none."""
        key = _message_key(tab, message_id)
        with self._lock:
            self._posted.pop(key, None)
        if self._state.get(key) is None:
            return False
        # The state deletes by prefix: the relay's own message ids (the only ones deleted) are hex of one
        # length, and the person's start with "u-", so no other key of the tab starts with this one.
        return self._state.prune(_ANY_AGE_S, key) > 0

    def add_file(self, tab: str, name: str, data: bytes) -> str:
        """Keep a file for the tab (the rest of a long answer); returns its id."""
        file_id = uuid.uuid4().hex
        self._state.set(f"f:{tab}:{file_id}", json.dumps({"name": name, "data": base64.b64encode(data).decode()}))
        return file_id

    def file(self, tab: str, file_id: str) -> tuple[str, bytes] | None:
        """A file of the tab: (name, data), or None."""
        raw = self._state.get(f"f:{tab}:{file_id}")
        if raw is None:
            return None
        data = json.loads(raw)
        return str(data["name"]), base64.b64decode(data["data"])

    def answering(self, tab: str, active: bool) -> None:
        """The tab's answer runs (``active``) or ended: while it runs the tab is never evicted and does not
        count toward ``max_tabs``; once it ended, the tabs beyond ``max_tabs`` go. Either way the person's
        message no longer waits for it to start."""
        (self._answering.add if active else self._answering.discard)(tab)
        self._used(tab, waiting=False)
        if not active:
            self._evict()

    def _used(self, tab: str, marks: dict[str, Any] | None = None, *, waiting: bool | None = None) -> None:
        """Note the tab's use now; ``marks``: its key as read before, whose marks of an answer running on
        another relay (the owner's, when the person writes through this one) and of a message waiting for
        its answer are kept; ``waiting``: a message waits from now (True), or no longer (False)."""
        now = self._clock()
        marks = marks or {}
        answering = now if tab in self._answering else int(marks.get("answering", 0))
        waits = now if waiting else 0 if waiting is False else int(marks.get("waiting", 0))
        self._state.set(_tab_key(tab), json.dumps({"used": now, "answering": answering, "waiting": waits}))

    def _evict(self) -> None:
        """Drop the transcripts of the tabs beyond ``max_tabs`` neither answering nor waiting for an answer,
        least recently used first."""
        if self.max_tabs is None:
            return
        looked, now = time.time(), self._clock()
        idle = []
        for key, raw in self._state.items("t:").items():
            marks = json.loads(raw)
            if not _marked(marks, "answering", now) and not _marked(marks, "waiting", now):
                idle.append((int(marks["used"]), key.removeprefix("t:").removesuffix(":")))
        for _, tab in sorted(idle)[:max(0, len(idle) - self.max_tabs)]:
            with self._lock:
                for key in [k for k in self._posted if k.startswith(f"m:{tab}:")]:
                    del self._posted[key]
            age = time.time() - looked  # what was written since the look stays
            for prefix in (f"m:{tab}:", f"f:{tab}:", _tab_key(tab)):
                self._state.prune(age, prefix)

    def entries(self, tab: str) -> list[Entry]:
        """The tab's messages in posting order."""
        prefix = f"m:{tab}:"
        rows = sorted((json.loads(raw)["at"], key.removeprefix(prefix), raw)
                      for key, raw in self._state.items(prefix).items())
        return [_entry(ident, json.loads(raw)) for _, ident, raw in rows]


def _marks(known: str | None) -> dict[str, Any]:
    """A tab's key as read (None: the tab has none yet)."""
    marks: dict[str, Any] = json.loads(known) if known else {}
    return marks


def _marked(marks: dict[str, Any], mark: str, now: int) -> bool:
    """The tab's ``marks`` hold ``mark`` (``answering`` or ``waiting``), set less than ``ANSWERING_HELD_S``
    ago (an older one is a dead relay's)."""
    at = int(marks.get(mark, 0))
    return bool(at) and now - at <= ANSWERING_HELD_S * 1e9


def _entry(message_id: str, data: dict[str, Any]) -> Entry:
    buttons = tuple(Button(label, token, style) for label, token, style in data["buttons"])
    return Entry(message_id, data["role"], data["text"], buttons, bool(data["plain"]), tuple(data["blocks"]))
