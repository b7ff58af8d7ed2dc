"""What every platform side of the burst benchmark offers, and what the people write.

A platform side is the fake server of one platform, started in the benchmark's own event loop,
plus the people on it: person ``i`` (0, 1, ...) has a conversation of their own (a private chat, a
DM, a channel thread, a browser tab) and writes there with ``write``. The side reports what the bot
shows into the ``Timeline`` (by conversation), timed where it arrives.
"""

from __future__ import annotations

from typing import Any, Protocol

from bench.burst.stats import Timeline

__all__ = ["BEGIN", "END", "FOOTER", "NothingToWatch", "Platform", "script"]

BEGIN = "Answer begins."
END = "Answer ends."
#: The relay's footer ends every answer it sends: its answer is complete once that shows too.
FOOTER = "⏱"


def script(chunks: int, seconds: float) -> str:
    """The scripted agent's answer: its first words at once, ``chunks`` words over ``seconds``, its end."""
    pause = seconds / max(1, chunks)
    words = "\n".join(f"sleep {pause:.4f}\ntext  w{i}" for i in range(chunks))
    return f"text {BEGIN}\n{words}\ntext  {END}" if chunks else f"text {BEGIN}\ntext  {END}"


class Platform(Protocol):
    """One platform's fake and its people, as the phases drive it."""

    name: str
    timeline: Timeline

    async def start(self) -> None:
        """Start the fake server."""

    async def close(self) -> None:
        """Stop the fake server (and every connection the people hold)."""

    def people(self, count: int) -> None:
        """Persons 0 .. count-1 exist on the platform, each with their conversation."""

    def relay_settings(self) -> dict[str, Any]:
        """The relay's ``surfaces.<name>`` section: the fake's address, every person allowed."""

    def env(self) -> dict[str, str]:
        """The tokens a bot reads from its environment."""

    def naive_args(self) -> list[str]:
        """The naive bot's arguments (where the fake is)."""

    async def watch(self, ids: range) -> None:
        """Before these people write: open what a person needs open to see the answer (the dashboard's
        event streams); nothing elsewhere."""

    async def unwatch(self) -> None:
        """Close what ``watch`` opened."""

    async def write(self, i: int, text: str) -> None:
        """Person ``i`` writes ``text`` in their conversation (the Timeline learns when)."""


class NothingToWatch:
    """A platform that shows a person the answer without anything opened first (all but the dashboard)."""

    async def watch(self, ids: range) -> None:
        """Nothing to open."""

    async def unwatch(self) -> None:
        """Nothing to close."""
