"""Neutral Markdown -> Discord's Markdown.

Discord renders most of CommonMark itself (emphasis, code, fences, lists, quotes, links, headings
``#`` to ``###``). What it does not know becomes its closest form: a heading of level 4 to 6 is
shown in bold. The core's footer (``⏱ 12.3s · context 45%``, the last block of an answer) becomes
Discord's small grey subtext (``-# ``), and a refusal card just before it (the core's order: nothing
else follows a refusal card) gains Discord's own hint to start again with ``/new``; the same words
anywhere else are agent text and stay as they are. Fenced code is never touched. Nothing is escaped: Discord
never rejects markup, and pings are prevented by the surface's ``allowed_mentions``, not by
rewriting the text.
"""

from __future__ import annotations

import re

from core.surface_api import FOOTER_GLYPH, REFUSAL_LEAD
from surfaces.discord.wording import REFUSAL_HINT

__all__ = ["to_discord"]

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_DEEP_HEADING = re.compile(r"^ {0,3}#{4,6}[ \t]+(.+?)[ \t#]*$")


def to_discord(markdown: str) -> str:
    """Discord's form of ``markdown`` (never longer than needed: headings lose their marks)."""
    out: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
            fence = None
        elif fence is None and (h := _DEEP_HEADING.match(line)):
            line = f"**{h.group(1)}**"
        out.append(line)
    if fence is None and len(out) >= 2 and out[-1].startswith(FOOTER_GLYPH) and not out[-2].strip():
        out[-1] = "-# " + out[-1]
        if _card_start(out) is not None:
            out.insert(len(out) - 2, REFUSAL_HINT)
    return "\n".join(out)


def _card_start(lines: list[str]) -> int | None:
    """Where the refusal card before the footer starts (``lines`` ends: card, blank, footer)."""
    i = len(lines) - 3
    while i >= 0 and lines[i].strip():
        i -= 1
    start = i + 1
    return start if start <= len(lines) - 3 and lines[start] == REFUSAL_LEAD else None
