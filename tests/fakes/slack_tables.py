"""Slack's ``table`` block as the fake Slack checks and shows it (docs.slack.dev,
reference/block-kit/blocks/table-block): 1 to 100 rows, every row 1 to 20 cells and as wide as the
others (a ragged table is refused), each cell ``raw_text`` with a non-empty text or ``rich_text`` with
elements; ``column_settings``, 20 at most, each null or ``align`` (left, center, right) and a boolean
``is_wrapped``. One table a message is the caller's check."""

from __future__ import annotations

from typing import Any

__all__ = ["TABLE_CELLS", "TABLE_ROWS", "table_lines", "valid_table"]

TABLE_ROWS = 100
TABLE_CELLS = 20


def table_lines(block: dict[str, Any]) -> str:
    """The table as a person reads it: a line a row, its cells' texts between `` | ``."""
    return "\n".join(" | ".join(map(_cell_text, row)) for row in block["rows"])


def _cell_text(cell: dict[str, Any]) -> str:
    if cell["type"] == "raw_text":
        return str(cell["text"])
    return "".join(str(e.get("text", "")) for section in cell["elements"] for e in section.get("elements", []))


def _valid_cell(cell: Any) -> bool:
    if not isinstance(cell, dict):
        return False
    if cell.get("type") == "raw_text":
        return isinstance(cell.get("text"), str) and bool(cell["text"])
    return cell.get("type") == "rich_text" and isinstance(cell.get("elements"), list) and bool(cell["elements"])


def valid_table(block: dict[str, Any]) -> bool:
    rows = block.get("rows")
    if not isinstance(rows, list) or not 0 < len(rows) <= TABLE_ROWS:
        return False
    if any(not isinstance(r, list) or not 0 < len(r) <= TABLE_CELLS or len(r) != len(rows[0]) for r in rows):
        return False
    settings = block.get("column_settings", [])
    if not isinstance(settings, list) or len(settings) > TABLE_CELLS:
        return False
    for setting in settings:
        if setting is None:
            continue
        if (not isinstance(setting, dict) or set(setting) - {"align", "is_wrapped"}
                or setting.get("align", "left") not in ("left", "center", "right")
                or not isinstance(setting.get("is_wrapped", False), bool)):
            return False
    return all(_valid_cell(c) for r in rows for c in r)
