"""One command registry; each surface supplies its own spelling. Everything else is a prompt."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ACTIONS", "Command", "parse_approval_reply", "route"]

#: The actions the core knows. Only "compact" has a spelling every surface shares (``/compact``).
ACTIONS = ("reset", "compact", "stop", "status", "model", "help")

_APPROVAL_REPLY = re.compile(r"^\s*(?:(approve)\s*([12])|(deny))\s*$", re.I)


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command: one of ``ACTIONS`` and the rest of the line."""

    action: str
    argument: str = ""


def route(text: str, spelling: Mapping[str, str]) -> Command | None:
    """The command ``text`` spells on this surface, or None for a prompt.

    ``/compact`` is understood everywhere even if a surface forgot to list it. A ``/cmd@botname``
    suffix (Telegram groups) is ignored.
    """
    stripped = text.strip()
    if not stripped:
        return None
    head, _, rest = stripped.partition(" ")
    word = head.split("@", 1)[0].lower()
    action = spelling.get(word) or ("compact" if word == "/compact" else None)
    if action not in ACTIONS:
        return None
    return Command(action, rest.strip())


def parse_approval_reply(text: str) -> str | None:
    """Numbered text replies for surfaces without buttons: ``approve 1`` (once), ``approve 2``
    (for this session), ``deny``. Returns an option kind or None."""
    match = _APPROVAL_REPLY.match(text)
    if match is None:
        return None
    if match.group(3):
        return "reject_once"
    return "allow_once" if match.group(2) == "1" else "allow_always"
