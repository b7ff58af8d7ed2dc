"""Conversation keys: one Slack thread is one conversation, ``slack:<team>:<channel>:<thread_ts>``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PREFIX", "Asker", "Thread", "parse_key"]

PREFIX = "slack:"


@dataclass(frozen=True, slots=True)
class Thread:
    """A thread in a channel (or a DM) of one workspace; ``thread_ts`` is its parent message."""

    team: str
    channel: str
    thread_ts: str

    @property
    def key(self) -> str:
        """The engine's conversation key for this thread."""
        return f"{PREFIX}{self.team}:{self.channel}:{self.thread_ts}"

    @property
    def is_dm(self) -> bool:
        """A direct message with the app (channel ids of DMs start with D)."""
        return self.channel.startswith("D")


@dataclass(frozen=True, slots=True)
class Asker:
    """A message's ``origin``: who wrote it (a channel stream is for them) and its ts (the working
    reaction goes on it; None for a slash command, which is no message)."""

    user: str
    ts: str | None = None


def parse_key(key: str) -> Thread:
    """The thread a conversation key names; ``ValueError`` when it is not a Slack key."""
    rest = key.removeprefix(PREFIX)
    parts = rest.split(":")
    if rest == key or len(parts) != 3 or not all(parts):
        raise ValueError(f"not a Slack conversation key: {key!r}")
    return Thread(*parts)
