"""Tables for a platform that draws none (an aligned code block, never broken pipes), and parsed for one
that draws its own (Slack's table block)."""

from __future__ import annotations

from core.engine.tables import MarkdownTable, monospace_tables, table_pieces

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


def test_table_pieces_are_the_text_and_the_tables_in_order() -> None:
    source = "Intro\n| a | **b** |\n|:-:|--:|\n| 1 |\n\nmid\n```\n| x | y |\n|---|---|\n```\n| k |\n|---|"
    intro, first, mid, second = table_pieces(source)
    assert intro == "Intro" and mid == "\nmid\n```\n| x | y |\n|---|---|\n```"
    assert first == MarkdownTable(("a", "b"), ("center", "right"), (("1", ""),))
    assert second == MarkdownTable(("k",), ("left",), ())
    assert table_pieces("no table | here") == ["no table | here"]
    assert "\n".join(p if isinstance(p, str) else p.monospace() for p in (intro, first, mid, second)) == (
        monospace_tables(source))
