"""The open pickers of each conversation: one-time buttons (and numbered replies) that choose a
project, an agent, a session or a mode. A newer list, a choice, or a reset expires the older one."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.engine.messages import Button

__all__ = ["PAGE", "Pick", "Picks"]

#: Options shown at once (platforms cap a message's buttons; a phone shows about this many).
PAGE = 8


@dataclass(slots=True)
class Pick:
    """One open list: what it chooses (``kind``), its options' values in order, and the value of its
    "more" button (the next page), if any. ``message_id`` is the message that shows it."""

    kind: str
    values: list[str]
    labels: list[str]
    more: str | None = None
    numbered: bool = False  # shown as numbered lines: a numbered reply chooses
    tokens: dict[str, int] = field(default_factory=dict)  # token -> option index (-1: more)
    message_id: str = ""
    chosen: int = -1  # the option taken

    @property
    def label(self) -> str:
        """The label of the option taken ("" for none, or the next page)."""
        return self.labels[self.chosen] if 0 <= self.chosen < len(self.labels) else ""


class Picks:
    """The latest list of each conversation."""

    def __init__(self) -> None:
        self._open: dict[str, Pick] = {}

    def offer(self, key: str, kind: str, options: Sequence[tuple[str, str]], *,
              more: str | None = None, more_label: str = "", numbered: bool = False) -> tuple[Pick, tuple[Button, ...]]:
        """Open a list of (label, value) options, replacing the conversation's earlier one; ``numbered``:
        shown as numbered lines (no buttons), answered by a number."""
        pick = Pick(kind, [value for _, value in options], [label for label, _ in options], more, numbered)
        buttons = []
        for index, (label, _) in enumerate(options):
            token = secrets.token_urlsafe(12)
            pick.tokens[token] = index
            buttons.append(Button(label, token))
        if more is not None:
            token = secrets.token_urlsafe(12)
            pick.tokens[token] = -1
            buttons.append(Button(more_label, token))
        self._open[key] = pick
        return pick, tuple(buttons)

    def holds(self, key: str, token: str) -> bool:
        """``token`` is a button of the conversation's open list (nothing is taken)."""
        pick = self._open.get(key)
        return pick is not None and token in pick.tokens

    def take(self, key: str, token: str) -> tuple[Pick, str | None] | None:
        """The list a press belongs to and the value chosen (None: its "more" button), once; None for a
        token that is unknown, used, or from another conversation's list."""
        pick = self._open.get(key)
        if pick is None or token not in pick.tokens:
            return None
        del self._open[key]
        index = pick.tokens[token]
        pick.chosen = index
        return pick, (pick.values[index] if index >= 0 else None)

    def take_number(self, key: str, text: str) -> tuple[Pick, str | None] | None:
        """A numbered reply ("2") to the conversation's open list (one past the last: its next page)."""
        pick = self._open.get(key)
        word = text.strip()
        if pick is None or not pick.numbered or not word.isdigit():
            return None
        number = int(word)
        if 1 <= number <= len(pick.values):
            del self._open[key]
            pick.chosen = number - 1
            return pick, pick.values[number - 1]
        if pick.more is not None and number == len(pick.values) + 1:
            del self._open[key]
            return pick, None
        return None

    def is_open(self, key: str) -> bool:
        """The conversation has a numbered list a reply may answer."""
        pick = self._open.get(key)
        return pick is not None and pick.numbered

    def forget(self, key: str) -> None:
        """The conversation was reset, or moved on: its list no longer applies."""
        self._open.pop(key, None)
