"""One command registry; each surface supplies its own spelling. Everything else is a prompt."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ACTIONS", "IGNORED", "Command", "agent_command", "command_word", "parse_approval_reply", "route"]

#: The actions the core knows. Only "compact" has a spelling every surface shares (``/compact``).
ACTIONS = ("reset", "compact", "stop", "status", "model", "help", "sessions", "project", "agent", "mode",
           "steer")

_APPROVAL_REPLY = re.compile(r"^\s*(?:(approve)\s*([12])|(deny))\s*$", re.I)


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command: one of ``ACTIONS`` and the rest of the line."""

    action: str
    argument: str = ""


#: A command addressed to another bot (``/stop@OtherBot``): neither a command here nor a prompt.
IGNORED = Command("ignored")


def route(text: str, spelling: Mapping[str, str], bot_usernames: Collection[str] = ()) -> Command | None:
    """The command ``text`` spells on this surface, ``IGNORED``, or None for a prompt.

    ``/compact`` is understood everywhere even if a surface forgot to list it. ``/cmd@name``
    (Telegram groups) is this bot's command when ``name`` is one of ``bot_usernames`` (any name, on
    a surface that has none) and ``IGNORED`` when it names another bot.
    """
    stripped = text.strip()
    if not stripped:
        return None
    head, _, rest = stripped.partition(" ")
    word, at, name = head.partition("@")
    word = word.lower()
    action = spelling.get(word) or ("compact" if word == "/compact" else None)
    if action not in ACTIONS:
        return None
    if at and bot_usernames and name.lower() not in {n.lower() for n in bot_usernames}:
        return IGNORED
    return Command(action, rest.strip())


_NOT_A_WORD = re.compile(r"[^a-z0-9]+")


def command_word(name: str) -> str:
    """An agent command's name as every platform can spell it: lower case, letters, digits and ``_``
    (Telegram's rule; ``create-plan`` is ``create_plan``)."""
    return _NOT_A_WORD.sub("_", name.lower()).strip("_")[:32]


def agent_command(text: str, commands: Sequence[tuple[str, str]]) -> str | None:
    """``text`` as the agent's own command (``/name rest``) when it starts with ``/`` or ``!`` and one
    of ``commands`` (name, description) in any spelling (``!review``, ``/create_plan``); else None."""
    stripped = text.strip()
    if not commands or stripped[:1] not in ("/", "!"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    word = command_word(head.partition("@")[0])
    name = next((n for n, _ in commands if command_word(n) == word), None) if word else None
    if name is None:
        return None
    return f"/{name} {rest.strip()}".rstrip()


def parse_approval_reply(text: str) -> str | None:
    """Numbered text replies for surfaces without buttons: ``approve 1`` (once), ``approve 2``
    (for this session), ``deny``. Returns an option kind or None."""
    match = _APPROVAL_REPLY.match(text)
    if match is None:
        return None
    if match.group(3):
        return "reject_once"
    return "allow_once" if match.group(2) == "1" else "allow_always"
