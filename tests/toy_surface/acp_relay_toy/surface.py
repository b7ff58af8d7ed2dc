"""What the core calls to show something: ``ToySurface`` appends each call to ``outbox.jsonl``."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from core.surface_api import (
    Block,
    Button,
    Capabilities,
    DeliveryFailed,
    MessageTooLong,
    Rendered,
    SurfaceDefaults,
    markdown_of,
    rendered_as,
)

__all__ = ["COMMANDS", "ToyFormatter", "ToyMessage", "ToySurface"]

#: The toy's spelling of the core's commands.
COMMANDS: Mapping[str, str] = MappingProxyType({"/new": "reset", "/compact": "compact", "/stop": "stop",
                                                "/status": "status", "/model": "model", "/help": "help"})


@dataclass(frozen=True, slots=True)
class ToyMessage:
    """What the toy shows: Markdown as it is, or plain text (``plain``: the markup was refused)."""

    text: str
    plain: bool = False

    @property
    def length(self) -> int:
        """Characters, as the toy's limit counts them."""
        return len(self.text)


class ToyFormatter:
    """Every kind of block as its neutral Markdown (a richer surface styles the kinds it knows)."""

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> ToyMessage:
        """``blocks`` as one toy message."""
        return ToyMessage(markdown_of(blocks), plain)


class ToySurface(SurfaceDefaults):
    """Keys are ``toy:<chat>``. Text is kept as the core's Markdown: a reader renders it."""

    name = "toy"
    commands = COMMANDS
    # No buttons (approvals become numbered replies), no typing indicator: the core has fallbacks.
    capabilities = Capabilities(max_message_length=4000, can_buttons=False, can_typing=False)
    formatter = ToyFormatter()

    def __init__(self, folder: Path) -> None:
        self.outbox = folder / "outbox.jsonl"
        shown = [json.loads(line) for line in self.outbox.read_text().splitlines()] if self.outbox.exists() else []
        self._ids = itertools.count(max((int(e["id"]) for e in shown), default=0) + 1)
        self._live = {e["id"] for e in shown if e["op"] == "send"} - {e["id"] for e in shown if e["op"] == "delete"}

    def _write(self, **entry: Any) -> None:
        with self.outbox.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    def _chat(self, conversation_key: str) -> str:
        return conversation_key.removeprefix("toy:")

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        """Append a new message; returns its id."""
        shown = rendered_as(message, ToyMessage)
        if shown.length > self.capabilities.max_message_length:
            raise MessageTooLong(f"{shown.length} characters")
        message_id = str(next(self._ids))
        self._write(op="send", chat=self._chat(conversation_key), id=message_id, text=shown.text, plain=shown.plain,
                    reply_to=reply_to)
        self._live.add(message_id)
        return message_id

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        """Append the message's new text."""
        shown = rendered_as(message, ToyMessage)
        if message_id not in self._live:
            raise DeliveryFailed(f"no message {message_id}")
        if shown.length > self.capabilities.max_message_length:
            raise MessageTooLong(f"{shown.length} characters")
        self._write(op="edit", chat=self._chat(conversation_key), id=message_id, text=shown.text, plain=shown.plain)

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """Append that the message is gone."""
        if message_id not in self._live:
            raise DeliveryFailed(f"no message {message_id}")
        self._live.discard(message_id)
        self._write(op="delete", chat=self._chat(conversation_key), id=message_id)

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        """The toy has no typing indicator (``can_typing`` is false, so the core never calls this)."""
