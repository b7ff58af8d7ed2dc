"""The dashboard formatter: the core's blocks -> what the page draws, kept in the tab's transcript.

A message keeps its neutral Markdown (``text``: what a reload without the blocks, a plain message
and the tests read) and its blocks as the page draws them (``blocks``): each is ``{"type": ...}``
with the words the page shows. The browser renders Markdown itself (marked, sanitised by DOMPurify);
tool lines, the plan, the refusal card and the footer are drawn from their fields, with the page's
own icons where the core's words open with an emoji (a browser without an emoji font shows boxes).
Nothing on the page is recognised by its words: the same text from the agent is only text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.surface_api import (
    Block,
    Footer,
    FormCard,
    Plan,
    RefusalCard,
    Text,
    Tools,
    markdown_of,
)

__all__ = ["DashboardFormatter", "DashboardMessage"]

@dataclass(frozen=True, slots=True)
class DashboardMessage:
    """One message of a tab: its neutral Markdown, its blocks for the page, and ``plain``."""

    text: str
    blocks: tuple[dict[str, Any], ...] = ()
    plain: bool = False

    @property
    def length(self) -> int:
        """Characters of the Markdown (the dashboard takes 100,000 a message)."""
        return len(self.text)


_STEP_STATES = {"completed": "done", "in_progress": "in-progress"}


def _page(block: Block) -> dict[str, Any]:
    """One block as the page draws it."""
    if isinstance(block, Tools):
        return {"type": "tools", "calls": [{"status": c.status, "words": c.words()} for c in block.calls]}
    if isinstance(block, Plan):
        return {"type": "plan", "steps": [{"state": _STEP_STATES.get(s.status, "todo"), "words": s.words()}
                                          for s in block.steps]}
    if isinstance(block, RefusalCard):
        return {"type": "refusal", "lines": block.lines()}
    if isinstance(block, Footer):
        return {"type": "footer", "words": block.words()}
    if isinstance(block, FormCard):  # drawn from its fields; the link is text, never a link
        return {"type": "form", "message": block.message, "url": block.url,
                "answers": [list(a) for a in block.answers], "question": block.question,
                "choices": list(block.choices), "hint": block.hint, "outcome": block.outcome_words(),
                "settled": block.settled,
                "reply": block.reply_wanted}
    return {"type": "markdown", "kind": block.kind if not isinstance(block, Text) else "text",
            "markdown": block.markdown()}


class DashboardFormatter:
    """Blocks as the page draws them (``_page``); plain text as it is."""

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> DashboardMessage:
        """One message."""
        text = markdown_of(blocks)
        if plain:
            return DashboardMessage(text, plain=True)
        return DashboardMessage(text, tuple(_page(b) for b in blocks if b.markdown()))
