"""The inbound journal: every accepted message is stored before it is handled.

It de-duplicates redeliveries (by platform message id, persisted), lets a restarted relay answer
what a killed one had received but not finished, and notes how far a message got: the platform
messages its answer occupies (``reply_log``: a restart continues the answer in them) and the
side-effecting tools its turn ran (a restart does not send it to the agent again without asking).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.acp.types import ToolCall
from core.engine.batched import Batched
from core.engine.deferred import DeferredWrites
from core.engine.messages import Attachment, InboundMessage
from core.engine.streamed import Posted
from core.redact import redact
from core.store import Store

__all__ = ["SAFE_TOOL_KINDS", "Journal", "ReplyRecorder", "Unfinished"]

#: Handled message ids are remembered this long (platforms redeliver within minutes, not weeks).
DEDUP_WINDOW_S = 7 * 24 * 3600.0
#: ACP tool kinds that change nothing: running one again is harmless. Any other kind (edit, delete,
#: move, execute, other, or none given) may have changed something.
SAFE_TOOL_KINDS = frozenset({"read", "search", "think", "fetch", "switch_mode"})


@dataclass(frozen=True, slots=True)
class Unfinished:
    """A journaled message that was never completed, and how far it got."""

    message: InboundMessage
    tool_may_have_run: bool
    #: (title, kind) of the side-effecting tools that may have run (empty for a store from before
    #: they were listed, even when ``tool_may_have_run``).
    tools: tuple[tuple[str, str], ...] = ()
    #: Its answer had begun on the platform (``Journal.reply_messages`` lists where).
    reply_started: bool = False


class ReplyRecorder:
    """A ``ReplyLog`` writing one message's answer to the store, as each platform message is made
    (kept until the database answers, with ``deferred``; with ``batched``, the messages of every
    answer noted in one round of the loop are written in one transaction)."""

    def __init__(self, store: Store, msg: InboundMessage, deferred: DeferredWrites | None = None,
                 batched: Batched | None = None) -> None:
        self.store = store
        self.surface, self.message_id, self.key = msg.surface, msg.message_id, msg.conversation_key
        self.deferred = deferred
        self.batched = batched
        self._started = False  # a record of this reply marked it started (or is kept to, in order)

    def _write(self, write: Callable[[], object]) -> None:
        if self.deferred is None:
            write()
        else:
            self.deferred.write(self.key, write)

    async def posted(self, entry: Posted) -> None:
        """Record where a piece is shown (the first one also marks the reply started).

        In a burst every answer's first message is recorded at once: with ``batched`` they are written
        together, at the end of the round (each was a transaction of its own, ahead of every first
        words shown after it: issue 24)."""
        store, surface, message_id, started = self.store, self.surface, self.message_id, self._started

        def record() -> None:
            store.record_reply_message(surface, message_id, entry.part, entry.piece, entry.message_id, entry.kind,
                                       started=started)

        if self.batched is not None:
            await self.batched.write_through(record)
        else:
            self._write(record)
        self._started = True

    def removed(self, part: int, piece: int) -> None:
        """The piece is no longer shown."""
        store, surface, message_id = self.store, self.surface, self.message_id
        self._write(lambda: store.forget_reply_message(surface, message_id, part, piece))


def _encode(msg: InboundMessage) -> dict[str, Any]:
    return {"text": msg.text, "user_id": msg.user_id, "display_name": msg.display_name,
            "reply_to": msg.reply_to, "attachments": [
                {"kind": a.kind, "mime_type": a.mime_type, "name": a.name,
                 "data": base64.b64encode(a.data).decode()} for a in msg.attachments],
            **({"edits": msg.edits, "deleted": msg.deleted} if msg.edits is not None else {})}


def _decode(surface: str, message_id: str, key: str, payload: dict[str, Any]) -> InboundMessage:
    attachments = tuple(Attachment(a["kind"], a["mime_type"], base64.b64decode(a["data"]), a.get("name", ""))
                        for a in payload.get("attachments", []))
    edits = payload.get("edits")  # (a person's change to another message, for the conversation's owner)
    return InboundMessage(surface, key, str(payload.get("user_id", "")), str(payload.get("text", "")),
                          message_id, str(payload.get("display_name", "")), attachments, payload.get("reply_to"),
                          edits=None if edits is None else str(edits),
                          deleted=edits is not None and bool(payload.get("deleted")))


class Journal:
    """The store's inbound table, in the engine's terms.

    Any relay journals (``record``, ``reject``); what follows about a message is the conversation
    owner's to write, through ``fenced(key)`` (relays sharing a store: fenced by the owner's lease,
    and kept in ``deferred`` while the database does not answer)."""

    def __init__(self, store: Store, fenced: Callable[[str], Store] | None = None,
                 deferred: DeferredWrites | None = None, batched: Batched | None = None) -> None:
        """``batched``: where the answers' messages are recorded with the others of the same round (None:
        each at once)."""
        self.store = store
        self.fenced: Callable[[str], Store] = fenced or (lambda key: store)
        self.deferred = deferred
        self.batched = batched

    def _owner(self, msg: InboundMessage) -> Store:
        return self.fenced(msg.conversation_key)

    def _write(self, msg: InboundMessage, write: Callable[[Store], object]) -> None:
        """One write of the owner's about ``msg`` (its lease, as it is now, fences it even when kept)."""
        store = self._owner(msg)
        if self.deferred is None:
            write(store)
        else:
            self.deferred.write(msg.conversation_key, lambda: write(store))

    async def settled(self, key: str) -> None:
        """Returns once nothing about ``key`` waits to be written (the database is back)."""
        if self.deferred is not None:
            await self.deferred.settled(key)

    def record(self, msg: InboundMessage) -> bool:
        """Journal ``msg``; False when it was seen before (a redelivery)."""
        return self.store.record_inbound(msg.surface, msg.message_id, msg.conversation_key, _encode(msg))

    def record_edit(self, edit: InboundMessage, *, handled: bool) -> bool:
        """Journal an edit (or a deletion); False when the same one came before. ``handled``: taken here and
        now, never replayed (else the conversation's owner handles it, as a message)."""
        return self.store.record_inbound(edit.surface, edit.message_id, edit.conversation_key, _encode(edit),
                                         completed=handled)

    def taken(self, surface: str, message_id: str) -> InboundMessage | None:
        """A message taken in, as journaled (None: never taken in, or rejected)."""
        rec = self.store.taken_inbound(surface, message_id)
        return None if rec is None else _decode(rec.surface, rec.message_id, rec.conversation_key, rec.payload)

    def rewrite(self, msg: InboundMessage) -> bool:
        """Journal the words ``msg`` has now (its person edited it before it was read), so a restart sends
        them; False when it is finished already (or was never taken in)."""
        store = self._owner(msg)
        rec = store.taken_inbound(msg.surface, msg.message_id)
        return rec is not None and store.rewrite_inbound(msg.surface, msg.message_id, {**rec.payload, "text": msg.text})

    def forget(self, msg: InboundMessage) -> None:
        """``msg`` was deleted by its person: never answered, and its words and files are not kept."""
        self._write(msg, lambda store: store.forget_inbound(msg.surface, msg.message_id,
                                                            {"user_id": msg.user_id, "forgotten": True}))

    def reject(self, surface: str, message_id: str, reason: str) -> None:
        """An update ``surface`` will not have answered: on record as rejected (never replayed)."""
        self.store.reject_inbound(surface, message_id, reason)

    def complete(self, msg: InboundMessage) -> None:
        """``msg`` is fully handled: it is never replayed."""
        self._write(msg, lambda store: store.complete_inbound(msg.surface, msg.message_id))

    def tool_may_run(self, msg: InboundMessage, call: ToolCall) -> None:
        """``call`` may run for ``msg``: if it can change something, a restart must not send ``msg``
        to the agent again without asking (the tool could run twice)."""
        if call.kind not in SAFE_TOOL_KINDS:
            # What the person is asked about after a restart: never a secret the agent put in a title.
            title = redact(call.display or call.title)
            self._write(msg, lambda store: store.note_inbound_tool(msg.surface, msg.message_id, title, call.kind))

    def reopen(self, msg: InboundMessage) -> None:
        """Handle ``msg`` again from the start (the person chose to send it again)."""
        self._owner(msg).reopen_inbound(msg.surface, msg.message_id)

    def reply_log(self, msg: InboundMessage) -> ReplyRecorder:
        """Where the streamer of ``msg``'s answer notes its messages."""
        return ReplyRecorder(self._owner(msg), msg, self.deferred, self.batched)

    def reply_messages(self, msg: InboundMessage) -> list[Posted]:
        """The platform messages ``msg``'s answer was shown in before a restart, by part and piece."""
        return [Posted(r.part, r.piece, r.platform_id, "stream" if r.kind == "stream" else "message")
                for r in self.store.reply_messages(msg.surface, msg.message_id)]

    def unfinished(self, conversation_key: str | None = None) -> list[Unfinished]:
        """What was received and never completed, in arrival order (only ``conversation_key``'s if given)."""
        return [Unfinished(_decode(r.surface, r.message_id, r.conversation_key, r.payload), r.progress == "tool",
                           r.tools, r.reply_started is not None)
                for r in self.store.unfinished_inbound(conversation_key)]

    def prune(self) -> int:
        """Forget messages completed longer ago than any platform redelivers."""
        return self.store.prune_inbound(DEDUP_WINDOW_S)
