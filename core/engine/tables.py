"""Markdown tables for a platform that draws none: an aligned monospace block instead of broken pipes.

A GFM table (a header row, a delimiter row of dashes and optional colons, then body rows, outside
code) becomes a fenced code block whose columns line up: each cell's inline marks (``**``, ``*``,
``_``, backticks, links' brackets) are taken off, since a code block shows them literally, and each
column is padded to its widest cell, right-aligned where the delimiter says ``--:``, centred for
``:-:``. Widths count characters East Asian wide forms as two, as a monospace font shows them.
A platform that draws tables of its own (Slack's ``table`` block) takes them parsed: ``table_pieces``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from core.engine.splitter import code_lines

__all__ = ["MarkdownTable", "monospace_tables", "table_pieces"]

_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"(\*\*|__|\*|`|~~)")


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [_MARKS.sub("", _LINK.sub(r"\1", c.strip())).replace("\\|", "|") for c in cells]


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _pad(text: str, width: int, align: str) -> str:
    gap = width - _width(text)
    if align == "right":
        return " " * gap + text
    if align == "center":
        return " " * (gap // 2) + text + " " * (gap - gap // 2)
    return text + " " * gap


@dataclass(frozen=True, slots=True)
class MarkdownTable:
    """One GFM table, parsed: cells with their inline marks off, every row as wide as the header."""

    header: tuple[str, ...]
    #: Each column's alignment: "left", "right" (``--:``) or "center" (``:-:``).
    aligns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def monospace(self) -> str:
        """The table as a fenced code block, its columns padded to line up."""
        widths = [max(_width(r[i]) for r in [self.header, *self.rows]) for i in range(len(self.header))]

        def line(cells: tuple[str, ...]) -> str:
            return " | ".join(_pad(c, widths[i], self.aligns[i]) for i, c in enumerate(cells)).rstrip()

        rule = "-+-".join("-" * w for w in widths)
        return "\n".join(["```", line(self.header), rule, *(line(r) for r in self.rows), "```"])


def _table(header: list[str], delimiter: list[str], rows: list[list[str]]) -> MarkdownTable:
    count = len(header)
    aligns = []
    for spec in (delimiter + ["-"] * count)[:count]:
        spec = spec.strip()
        aligns.append("center" if spec.startswith(":") and spec.endswith(":") else
                      "right" if spec.endswith(":") else "left")
    return MarkdownTable(tuple(header), tuple(aligns), tuple(tuple((r + [""] * count)[:count]) for r in rows))


def table_pieces(markdown: str) -> list[str | MarkdownTable]:
    """``markdown`` cut at its tables outside code: text (lines joined by newlines) and tables in order,
    never two texts in a row (joined by newlines, each table as its ``monospace`` form, they are
    ``monospace_tables``)."""
    if "|" not in markdown:
        return [markdown]
    lines = code_lines(markdown)
    pieces: list[str | MarkdownTable] = []
    text: list[str] = []
    i = 0
    while i < len(lines):
        line, code = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if (not code and "|" in line and nxt is not None and not nxt[1] and _DELIMITER.match(nxt[0])
                and "-" in nxt[0]):
            header, delimiter = _cells(line), _cells(nxt[0])
            rows: list[list[str]] = []
            i += 2
            while i < len(lines) and not lines[i][1] and "|" in lines[i][0] and lines[i][0].strip():
                rows.append(_cells(lines[i][0]))
                i += 1
            if text:
                pieces.append("\n".join(text))
                text = []
            pieces.append(_table(header, delimiter, rows))
            continue
        text.append(line)
        i += 1
    if text:
        pieces.append("\n".join(text))
    return pieces


def monospace_tables(markdown: str) -> str:
    """``markdown`` with every table outside code as an aligned code block (the rest unchanged)."""
    return "\n".join(p if isinstance(p, str) else p.monospace() for p in table_pieces(markdown))
