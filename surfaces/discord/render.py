"""The Discord formatter: the core's blocks -> Discord's Markdown, rendered once per message.

Discord renders most of CommonMark itself (emphasis, code, fences, lists, quotes, links, headings
``#`` to ``###``). What it does not know becomes its closest form: a heading of level 4 to 6 is
shown in bold (outside code, as the core reads fences: ``code_lines``). The core's footer is
Discord's small grey subtext (``-# ⏱ 12.3s · context 45%``), and a refusal card gains Discord's own
hint to start again with ``/new``: both are known by their block, so the same words written by the
agent stay as they are. Nothing is escaped: Discord never rejects markup, and pings are prevented
by the surface's ``allowed_mentions``, not by rewriting the text. Plain text (``plain``) is escaped
so that Discord shows it exactly as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import discord

from core.surface_api import (
    Block,
    Footer,
    RefusalCard,
    Text,
    code_lines,
    markdown_of,
    monospace_tables,
)
from surfaces.discord.wording import REFUSAL_HINT

__all__ = ["DiscordFormatter", "DiscordMessage", "to_discord"]

_DEEP_HEADING = re.compile(r"^ {0,3}#{4,6}[ \t]+(.+?)[ \t#]*$")


def to_discord(markdown: str) -> str:
    """Discord's form of ``markdown`` (never longer than needed: headings lose their marks)."""
    out: list[str] = []
    for line, code in code_lines(markdown):
        if not code and (h := _DEEP_HEADING.match(line)):
            line = f"**{h.group(1)}**"
        out.append(line)
    return "\n".join(out)


def _block(block: Block) -> str:
    words = block.markdown()
    if isinstance(block, Footer):
        return f"-# {words}"
    if isinstance(block, RefusalCard):
        return f"{words}\n{REFUSAL_HINT}"
    if isinstance(block, Text):  # Discord draws no tables: an aligned code block instead of broken pipes
        return monospace_tables(words)
    return words


@dataclass(frozen=True, slots=True)
class DiscordMessage:
    """A message's ``content`` as Discord shows it; ``length`` in characters, as Discord counts."""

    content: str

    @property
    def length(self) -> int:
        """Characters, as Discord counts them against its 2,000."""
        return len(self.content)


class DiscordFormatter:
    """Blocks as Discord Markdown (``to_discord``), the footer as subtext, the refusal card with its hint."""

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> DiscordMessage:
        """The message's content."""
        if plain:  # Discord parses Markdown in every message: plain text is shown as sent by escaping it
            return DiscordMessage(discord.utils.escape_markdown(markdown_of(blocks)))
        return DiscordMessage(to_discord("\n\n".join(m for m in (_block(b) for b in blocks) if m)))
