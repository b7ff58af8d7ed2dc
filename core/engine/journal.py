"""The inbound journal: every accepted message is stored before it is handled.

It de-duplicates redeliveries (by platform message id, persisted), lets a restarted relay answer
what a killed one had received but not finished, and notes how far a message got ("tool": a tool
may have run, so it is never replayed).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from core.engine.messages import Attachment, InboundMessage
from core.store import Store

__all__ = ["Journal", "Unfinished"]

#: Handled message ids are remembered this long (platforms redeliver within minutes, not weeks).
DEDUP_WINDOW_S = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Unfinished:
    """A journaled message that was never completed, and how far it got."""

    message: InboundMessage
    tool_may_have_run: bool


def _encode(msg: InboundMessage) -> dict[str, Any]:
    return {"text": msg.text, "user_id": msg.user_id, "display_name": msg.display_name,
            "reply_to": msg.reply_to, "attachments": [
                {"kind": a.kind, "mime_type": a.mime_type, "name": a.name,
                 "data": base64.b64encode(a.data).decode()} for a in msg.attachments]}


def _decode(surface: str, message_id: str, key: str, payload: dict[str, Any]) -> InboundMessage:
    attachments = tuple(Attachment(a["kind"], a["mime_type"], base64.b64decode(a["data"]), a.get("name", ""))
                        for a in payload.get("attachments", []))
    return InboundMessage(surface, key, str(payload.get("user_id", "")), str(payload.get("text", "")),
                          message_id, str(payload.get("display_name", "")), attachments, payload.get("reply_to"))


class Journal:
    """The store's inbound table, in the engine's terms."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(self, msg: InboundMessage) -> bool:
        """Journal ``msg``; False when it was seen before (a redelivery)."""
        return self.store.record_inbound(msg.surface, msg.message_id, msg.conversation_key, _encode(msg))

    def reject(self, surface: str, message_id: str, reason: str) -> None:
        """An update ``surface`` will not have answered: on record as rejected (never replayed)."""
        self.store.reject_inbound(surface, message_id, reason)

    def complete(self, msg: InboundMessage) -> None:
        """``msg`` is fully handled: it is never replayed."""
        self.store.complete_inbound(msg.surface, msg.message_id)

    def tool_may_run(self, msg: InboundMessage) -> None:
        """A tool may run for ``msg``: a restart must not replay it (the tool could run twice)."""
        self.store.set_inbound_progress(msg.surface, msg.message_id, "tool")

    def unfinished(self) -> list[Unfinished]:
        """What was received and never completed, in arrival order."""
        return [Unfinished(_decode(r.surface, r.message_id, r.conversation_key, r.payload), r.progress == "tool")
                for r in self.store.unfinished_inbound()]

    def prune(self) -> int:
        """Forget messages completed longer ago than any platform redelivers."""
        return self.store.prune_inbound(DEDUP_WINDOW_S)
