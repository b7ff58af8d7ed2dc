"""The dashboard as a ``Surface``: each browser tab is one conversation (``dashboard:<tab id>``).

Sending, editing and deleting change the tab's transcript (SQLite, or the store relays share) and
publish an event to every browser connection watching that tab; with a shared store, to those of
every relay (``Host.broadcast``: the event names the message, the other relays read it in the
store). A piece of an answer is the message whose id its place in the answer makes (``send_once``), so
a relay killed before the store noted the message as the answer's leaves nothing a restart posts
again. The edits made in one round of the event loop (every tab answering streams several a second)
are written in one transaction, then shown (``core.rounds``), as are the messages people post and the
relay's own (a burst's first answers). What
the core shows arrives rendered by ``DashboardFormatter``: the neutral Markdown and the blocks the page
draws (the browser renders the Markdown).

A relay message the transcript cannot save because its disk is full is shown live all the same,
marked unsaved (the page says a reload loses it), and so are its later edits: an answer under way when
the disk fills goes on showing instead of stopping where its last saved edit left it. Any other
failure to save is a failed delivery, retried by the core as before (nothing is shown that was not
written).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

from core.surface_api import (
    Button,
    Capabilities,
    DeliveryFailed,
    MessageTooLong,
    Rendered,
    Round,
    StoreError,
    SurfaceDefaults,
    Text,
    disk_full,
    redact,
    rendered_as,
)
from surfaces.dashboard.render import DashboardFormatter, DashboardMessage
from surfaces.dashboard.shared import SharedTranscript
from surfaces.dashboard.transcript import Edit, Entry, Transcript

__all__ = ["CAPABILITIES", "COMMANDS", "SURFACE_NAME", "DashboardSurface", "Subscriber", "conversation_key",
           "file_url", "valid_tab"]

SURFACE_NAME = "dashboard"
CAPABILITIES = Capabilities(max_message_length=100_000, can_edit=True, can_delete=True, can_buttons=True,
                            can_typing=True, edit_interval_s=0.2, max_file_bytes=50 * 1024 * 1024)
#: A reset is a new browser tab, so there is no spelling for it; stop is also the Stop button.
COMMANDS: Mapping[str, str] = MappingProxyType(
    {"/compact": "compact", "/stop": "stop", "/status": "status", "/model": "model", "/help": "help",
     "/sessions": "sessions", "/project": "project", "/agent": "agent", "/mode": "mode", "/steer": "steer"})

log = logging.getLogger("acp_relay.dashboard")

_RE_TAB = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: At most this many unsaved messages a tab are remembered (for their edits): a disk full for days.
_UNSAVED_PER_TAB = 1000
_PREFIX = f"{SURFACE_NAME}:"
#: Events a slow browser may fall behind by before it is sent a fresh snapshot instead.
_BACKLOG = 500

Event = dict[str, Any]


def valid_tab(tab: str) -> bool:
    """Tab ids are what the browser generates: 1-64 letters, digits, ``-`` and ``_``."""
    return _RE_TAB.fullmatch(tab) is not None


def file_url(tab: str, file_id: str) -> str:
    """Where the browser downloads a file the relay posted in ``tab``."""
    return f"/api/conversations/{tab}/files/{file_id}"


def _piece_id(key: str) -> str:
    """The message id of the answer's piece ``key`` names: hex of a random id's length (``SharedTranscript``
    deletes by prefix, so the relay's ids must all be one length)."""
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def conversation_key(tab: str) -> str:
    """The engine's conversation key for a tab."""
    return _PREFIX + tab


def _tab(key: str, message: Rendered | None = None) -> str:
    tab = key.removeprefix(_PREFIX)
    if tab == key or not valid_tab(tab):
        raise DeliveryFailed(f"not a dashboard conversation: {key!r}")
    if message is not None and message.length > CAPABILITIES.max_message_length:
        raise MessageTooLong(f"{message.length} characters; the dashboard takes {CAPABILITIES.max_message_length}")
    return tab



class Subscriber:
    """One browser connection: its queue of events. ``None`` means the relay is shutting down."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=_BACKLOG)

    def push(self, event: Event | None) -> None:
        """Queue an event; a browser too far behind loses its backlog and gets a ``resync``."""
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:  # the browser fell behind: drop the backlog, send it the whole state
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(event if event is None else {"type": "resync"})


class DashboardSurface(SurfaceDefaults):
    """The ``Surface`` the engine calls; the web server reads transcripts and subscribes here."""

    name = SURFACE_NAME
    capabilities = CAPABILITIES
    commands = COMMANDS
    formatter = DashboardFormatter()

    def __init__(self, transcript: Transcript | SharedTranscript,
                 broadcast: Callable[[str], None] | None = None) -> None:
        """``broadcast``: a shared store's (``Host.broadcast``); the other relays' events come to ``on_shared``."""
        self.transcript = transcript
        self._broadcast = broadcast
        self._origin = uuid.uuid4().hex  # this surface's own broadcasts come back to it: skipped
        self._subscribers: dict[str, set[Subscriber]] = {}
        self._typing: set[str] = set()  # tabs whose "working" indicator is on (their answer runs)
        #: Streamed edits, several a second in every tab answering: those of one round of the loop are
        #: written in one transaction (``rounds``).
        self._edits: Round[Edit, Entry | None] = Round(self._write_edits)
        #: The person's messages posted in one round of the loop, written in one transaction (``post_user``).
        self._posted: Round[tuple[str, Entry], Entry | None] = Round(self._write_posted)
        #: The relay's messages (in a burst, every answer's first words at once), the same way.
        self._added: Round[tuple[str, Entry], Entry | None] = Round(self._write_added)
        #: Relay messages the transcript could not save, by tab: shown live, unsaved (so are their edits).
        self._unsaved: dict[str, set[str]] = {}

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        """Append a relay message to the tab; returns its id."""
        return await self._add(conversation_key, message, buttons, uuid.uuid4().hex)

    async def send_once(self, conversation_key: str, message: Rendered, *, key: str,
                        buttons: tuple[Button, ...] = (), reply_to: str | None = None) -> str:
        """Append a piece of an answer as the message whose id ``key`` makes (the piece's place in the
        answer): the transcript's row says which piece it shows. A relay killed after the transcript
        took it and before the store noted it as the answer's left that message, claimed by nobody; the
        restarted relay (or, sharing a store, the one that took the conversation over) asks for the piece
        again with the same key and that message is rewritten with it instead of posted again below."""
        return await self._add(conversation_key, message, buttons, _piece_id(key))

    async def _add(self, conversation_key: str, message: Rendered, buttons: tuple[Button, ...],
                   message_id: str) -> str:
        """Write a relay message into its tab's transcript with the others of this round, then show it;
        returns its id."""
        tab, shown = _tab(conversation_key, message), rendered_as(message, DashboardMessage)
        entry = Entry(message_id, "agent", shown.text, buttons, shown.plain, shown.blocks)
        try:
            added = await self._added.submit((tab, entry))
        except (sqlite3.Error, StoreError) as exc:
            if not disk_full(exc):
                raise DeliveryFailed(f"dashboard transcript: {exc}") from exc
            self._show_unsaved(tab, entry, exc)
            return entry.id
        if added is None:
            log.info("took up the message %s a killed relay left in tab %s", message_id, tab)
        return entry.id

    def _write_added(self, added: list[tuple[str, Entry]]) -> list[Entry | None]:
        """The relay's messages of one round of the loop, in one transaction; each shown once written
        (None: a message of that id was there, left by a killed relay: rewritten, and shown, in its place).
        Only ``send_once``'s ids can be there already: a fresh id never collides."""
        written = self.transcript.add_many(added, rewrite=True)
        for tab, entry in added:
            self._publish(tab, entry.to_json())
        return written

    async def send_file(self, conversation_key: str, name: str, data: bytes, *, caption: Rendered,
                        fallback: Rendered, reply_to: str | None = None) -> str:
        """Keep the file in the transcript and post its caption with a download link."""
        tab = _tab(conversation_key)
        try:
            file_id = self.transcript.add_file(tab, name, data)
        except (sqlite3.Error, StoreError) as exc:
            raise DeliveryFailed(f"dashboard transcript: {exc}") from exc
        link = f"{rendered_as(caption, DashboardMessage).text} [{name}]({file_url(tab, file_id)})"
        return await self.send(conversation_key, self.formatter.render((Text(link),)))

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        """Replace a message's text and buttons."""
        tab, shown = _tab(conversation_key, message), rendered_as(message, DashboardMessage)
        edited = Entry(message_id, "agent", shown.text, buttons, shown.plain, shown.blocks)
        try:
            entry = await self._edits.submit(Edit(tab, message_id, shown.text, buttons, shown.plain, shown.blocks))
        except (sqlite3.Error, StoreError) as exc:
            if not disk_full(exc):
                raise DeliveryFailed(f"dashboard transcript: {exc}") from exc
            self._show_unsaved(tab, edited, exc)
            return
        if entry is None:
            if message_id not in self._unsaved.get(tab, ()):
                raise DeliveryFailed(f"no message {message_id!r} in {conversation_key}")
            self._show_unsaved(tab, edited, None)  # never saved: its edits are shown live too

    def _show_unsaved(self, tab: str, entry: Entry, exc: Exception | None) -> None:
        """Show ``entry`` live though the transcript could not save it (``exc``), marked unsaved; logged
        once a tab while it lasts. Only this relay's browsers see it (telling the others needs the store)."""
        unsaved = self._unsaved.setdefault(tab, set())
        if exc is not None and not unsaved:
            log.warning("the transcript of tab %s could not save an answer; it is shown live, unsaved: %s", tab, exc)
        if len(unsaved) < _UNSAVED_PER_TAB:
            unsaved.add(entry.id)
        event = {**entry.to_json(), "unsaved": True}
        for subscriber in self._subscribers.get(tab, ()):
            subscriber.push(event)

    def _write_edits(self, edits: list[Edit]) -> list[Entry | None]:
        """The edits of one round of the loop, in one transaction; each shown once written."""
        return self._shown([edit.tab for edit in edits], self.transcript.update_many(edits))

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """Remove a message (a reply that got shorter)."""
        tab = _tab(conversation_key)
        try:
            deleted = self.transcript.delete(tab, message_id)
        except (sqlite3.Error, StoreError) as exc:
            raise DeliveryFailed(f"dashboard transcript: {exc}") from exc
        if deleted:
            self._publish(tab, {"type": "delete", "id": message_id})

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        """Show or hide the "working" indicator."""
        tab = _tab(conversation_key)
        if active:
            self._typing.add(tab)
        else:
            self._typing.discard(tab)
        self.transcript.answering(tab, active)  # a tab answering keeps its transcript past max_tabs
        self._publish(tab, {"type": "typing", "active": active})

    async def post_user(self, tab: str, text: str, message_id: str) -> Entry | None:
        """Record the person's own message (None if this id was already recorded: a resend); shown once
        it is in the transcript.

        The agent gets it as written; the transcript, kept for days, never keeps a secret pasted in it.
        The messages posted in one round of the event loop are written together, in one transaction: a
        burst of tabs writing at once paid a commit each, ahead of every first answer (issue 24).
        """
        return await self.posting_user(tab, text, message_id)

    def posting_user(self, tab: str, text: str, message_id: str) -> asyncio.Future[Entry | None]:
        """``post_user`` without waiting: the message is written at the end of this round of the loop,
        before the journal of the same message queued after it (unless another surface's message opened
        the journal's round first: it is then written just after, still rounds before any answer)."""
        return self._posted.put((tab, Entry(f"u-{message_id}", "user", redact(text))))

    def _write_posted(self, posted: list[tuple[str, Entry]]) -> list[Entry | None]:
        """The person's messages of one round of the loop, in one transaction; each shown once written."""
        return self._shown([tab for tab, _ in posted], self.transcript.post_many(posted))

    def _shown(self, tabs: list[str], entries: list[Entry | None]) -> list[Entry | None]:
        """Publish each entry written (None: not written) to its tab; returns ``entries``."""
        for tab, entry in zip(tabs, entries, strict=True):
            if entry is not None:
                self._publish(tab, entry.to_json())
        return entries

    def snapshot(self, tab: str) -> Event:
        """Everything the tab shows now: the first event of every browser connection."""
        return {"type": "snapshot", "messages": [e.to_json() for e in self.transcript.entries(tab)],
                "typing": tab in self._typing}

    @contextmanager
    def subscribe(self, tab: str) -> Iterator[Subscriber]:
        """Receive the tab's events while the ``with`` block runs."""
        subscriber = Subscriber()
        self._subscribers.setdefault(tab, set()).add(subscriber)
        try:
            yield subscriber
        finally:
            subs = self._subscribers.get(tab)
            if subs is not None:
                subs.discard(subscriber)
                if not subs:
                    del self._subscribers[tab]

    def close(self) -> None:
        """End every event stream (the relay is shutting down)."""
        for subs in self._subscribers.values():
            for subscriber in subs:
                subscriber.push(None)

    def _publish(self, tab: str, event: Event) -> None:
        for subscriber in self._subscribers.get(tab, ()):
            subscriber.push(event)
        if self._broadcast is not None:  # what the event names, not its content (under 8000 bytes)
            shared = {"from": self._origin, "tab": tab, "type": event["type"]}
            shared.update({"id": event["id"]} if "id" in event else {"active": event.get("active", False)})
            try:
                self._broadcast(json.dumps(shared))
            except StoreError as exc:  # the tab is in the store: a reload on another relay shows it
                log.warning("the other relays' tabs of %s missed a change: %s", tab, exc)

    def resync(self) -> None:
        """Send every browser connection the whole state again (events of other relays may be missed)."""
        for subs in self._subscribers.values():
            for subscriber in subs:
                subscriber.push({"type": "resync"})

    async def on_shared(self, payload: str) -> None:
        """An event of another relay's dashboard (``Host.on_broadcast``): shown to this relay's tabs."""
        try:
            data = json.loads(payload)
            tab, kind = str(data["tab"]), data["type"]
            if data["from"] == self._origin or not valid_tab(tab):
                return
            if kind == "typing":
                (self._typing.add if data["active"] else self._typing.discard)(tab)
                event: Event | None = {"type": "typing", "active": bool(data["active"])}
            elif tab not in self._subscribers:
                return  # nobody watches the tab here
            elif kind == "delete":
                event = {"type": "delete", "id": str(data["id"])}
            else:
                entry = self.transcript.get(tab, str(data["id"]))
                event = None if entry is None else entry.to_json()  # deleted since
        except (ValueError, KeyError, TypeError) as exc:  # another relay's bug: never this relay's end
            log.warning("an unreadable dashboard event from another relay was ignored: %r", exc)
            return
        except (sqlite3.Error, StoreError) as exc:
            log.warning("a change of tab %s made on another relay could not be read: %s", tab, exc)
            return
        for subscriber in self._subscribers.get(tab, ()) if event is not None else ():
            subscriber.push(event)
