"""Tables for a platform that draws none (Discord, Slack): an aligned code block, never broken pipes."""

from __future__ import annotations

from core.engine.tables import monospace_tables

TABLE = ("Sizes:\n\n| Name | Size | Note |\n|:---|--:|:-:|\n| a.py | 12 | ok |\n"
         "| **long_name.py** | 3400 | `x` |\n\nafter")


def test_a_table_becomes_an_aligned_code_block_with_its_marks_taken_off() -> None:
    assert monospace_tables(TABLE) == (
        "Sizes:\n\n```\nName         | Size | Note\n-------------+------+-----\na.py         |   12 |  ok\n"
        "long_name.py | 3400 |  x\n```\n\nafter")


def test_code_and_text_without_a_delimiter_row_are_left_alone() -> None:
    code = "```\n| a | b |\n|---|---|\n```"
    assert monospace_tables(code) == code
    assert monospace_tables("a | b is not a table\nnor | this") == "a | b is not a table\nnor | this"


def test_ragged_rows_links_escaped_pipes_and_wide_characters_line_up() -> None:
    shown = monospace_tables("| k | v |\n|---|---|\n| [doc](http://x) | a \\| b |\n| 日本 |\n| x | y | extra |")
    assert shown.splitlines() == ["```", "k    | v", "-----+------", "doc  | a | b", "日本 |", "x    | y", "```"]
