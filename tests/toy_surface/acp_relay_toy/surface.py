"""What the core calls to show something: ``ToySurface`` appends each call to ``outbox.jsonl``."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from core.surface_api import Button, Capabilities, DeliveryFailed, MessageTooLong, SurfaceDefaults

__all__ = ["COMMANDS", "ToySurface"]

#: The toy's spelling of the core's commands.
COMMANDS: Mapping[str, str] = MappingProxyType({"/new": "reset", "/compact": "compact", "/stop": "stop",
                                                "/status": "status", "/model": "model", "/help": "help"})


class ToySurface(SurfaceDefaults):
    """Keys are ``toy:<chat>``. Text is kept as the core's Markdown: a reader renders it."""

    name = "toy"
    commands = COMMANDS
    # No buttons (approvals become numbered replies), no typing indicator: the core has fallbacks.
    capabilities = Capabilities(max_message_length=4000, can_buttons=False, can_typing=False)

    def __init__(self, folder: Path) -> None:
        self.outbox = folder / "outbox.jsonl"
        shown = [json.loads(line) for line in self.outbox.read_text().splitlines()] if self.outbox.exists() else []
        self._ids = itertools.count(max((int(e["id"]) for e in shown), default=0) + 1)
        self._live = {e["id"] for e in shown if e["op"] == "send"} - {e["id"] for e in shown if e["op"] == "delete"}

    def render(self, markdown: str) -> str:
        """The toy shows Markdown as it is."""
        return markdown

    def _write(self, **entry: Any) -> None:
        with self.outbox.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    def _chat(self, conversation_key: str) -> str:
        return conversation_key.removeprefix("toy:")

    async def send(self, conversation_key: str, text: str, *, buttons: tuple[Button, ...] = (),
                   plain: bool = False, reply_to: str | None = None) -> str:
        """Append a new message; returns its id."""
        if len(text) > self.capabilities.max_message_length:
            raise MessageTooLong(f"{len(text)} characters")
        message_id = str(next(self._ids))
        self._write(op="send", chat=self._chat(conversation_key), id=message_id, text=text, plain=plain,
                    reply_to=reply_to)
        self._live.add(message_id)
        return message_id

    async def edit(self, conversation_key: str, message_id: str, text: str, *,
                   buttons: tuple[Button, ...] = (), plain: bool = False) -> None:
        """Append the message's new text."""
        if message_id not in self._live:
            raise DeliveryFailed(f"no message {message_id}")
        if len(text) > self.capabilities.max_message_length:
            raise MessageTooLong(f"{len(text)} characters")
        self._write(op="edit", chat=self._chat(conversation_key), id=message_id, text=text, plain=plain)

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """Append that the message is gone."""
        if message_id not in self._live:
            raise DeliveryFailed(f"no message {message_id}")
        self._live.discard(message_id)
        self._write(op="delete", chat=self._chat(conversation_key), id=message_id)

    async def typing(self, conversation_key: str, active: bool) -> None:
        """The toy has no typing indicator (``can_typing`` is false, so the core never calls this)."""
