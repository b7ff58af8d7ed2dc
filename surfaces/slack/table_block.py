"""Slack's Block Kit ``table`` block for a Markdown table, and where a text may carry one.

Slack takes one ``table`` block a message, of at most 100 rows of at most 20 cells
(docs.slack.dev, reference/block-kit/blocks/table-block). A cell is ``raw_text`` of the Markdown
cell with its inline marks off (as the aligned code block shows it); Slack refuses an empty one, so
an empty cell is a space. Columns wrap (a long cell is not cut) and keep the table's alignment.
Every other table stays the aligned code block (``monospace_tables``).
"""

from __future__ import annotations

from typing import Any

from core.surface_api import MarkdownTable, table_pieces

__all__ = ["MAX_CELLS", "MAX_ROWS", "fits", "split_at_table", "table_block"]

MAX_ROWS = 100  # the header row included
MAX_CELLS = 20


def fits(table: MarkdownTable) -> bool:
    """Whether Slack takes ``table`` as a ``table`` block."""
    return 0 < len(table.header) <= MAX_CELLS and 1 + len(table.rows) <= MAX_ROWS


def table_block(table: MarkdownTable) -> dict[str, Any]:
    """The ``table`` block of ``table`` (which ``fits``)."""
    rows = [[{"type": "raw_text", "text": cell or " "} for cell in row] for row in (table.header, *table.rows)]
    settings = [{"is_wrapped": True, **({"align": a} if a != "left" else {})} for a in table.aligns]
    return {"type": "table", "rows": rows, "column_settings": settings}


def split_at_table(markdown: str) -> tuple[str, MarkdownTable, str] | None:
    """``markdown`` cut at its first table that ``fits``: the text before (other tables in it as aligned
    code blocks), the table, the text after; blank lines at the cut dropped. None if none fits."""
    pieces = table_pieces(markdown)
    for i, piece in enumerate(pieces):
        if isinstance(piece, MarkdownTable) and fits(piece):
            return _joined(pieces[:i]).rstrip(), piece, _joined(pieces[i + 1:]).lstrip("\n")
    return None


def _joined(pieces: list[str | MarkdownTable]) -> str:
    return "\n".join(p if isinstance(p, str) else p.monospace() for p in pieces)
