"""A Markdown table in an answer on Slack: a native ``table`` block between the ``markdown`` blocks of the
text around it, and the aligned code block wherever a table block cannot go (a native stream, a second
table, a table over Slack's limits, a plain-text retry)."""

from __future__ import annotations

from core.engine.blocks import Notices, Text
from core.engine.messages import Button
from surfaces.slack.render import SlackFormatter

TABLE = "| Name | **Size** |\n|:---|---:|\n| [a.py](http://x/a.py) | 12 |\n| b.py |\n"
ANSWER = f"Here are the files:\n{TABLE}\nBoth are *small*."
ALIGNED = "```\nName | Size\n-----+-----\na.py |   12\nb.py |\n```"


def raw(text: str) -> dict[str, str]:
    return {"type": "raw_text", "text": text}


def test_a_table_is_a_table_block_between_the_markdown_before_and_after_it() -> None:
    message = SlackFormatter().render((Notices(("Retrying.",)), Text(ANSWER)))
    body = message.payload((Button("Stop", "tok"),))
    kinds = [b["type"] for b in body["blocks"]]
    assert kinds == ["markdown", "table", "markdown", "actions"]
    before, table, after, _ = body["blocks"]
    assert before == {"type": "markdown", "text": "Retrying.\n\nHere are the files:"}
    assert after == {"type": "markdown", "text": "Both are *small*."}
    # Cells are raw text with their inline marks taken off; a short row is padded (Slack takes no empty text).
    assert table["rows"] == [[raw("Name"), raw("Size")], [raw("a.py"), raw("12")], [raw("b.py"), raw(" ")]]
    assert table["column_settings"] == [{"is_wrapped": True}, {"is_wrapped": True, "align": "right"}]
    # The notification text reads the table as aligned lines, escaped, with no markup.
    assert "Name | Size" in body["text"] and "a.py |   12" in body["text"] and "**" not in body["text"]
    # The length reported is the stream's form (the table as a code block): never less than what the
    # payload's markdown blocks hold against Slack's 12,000.
    assert ALIGNED in message.markdown and message.streamable == message.markdown
    assert message.length == len(message.markdown) >= len(before["text"]) + len(after["text"])


def test_a_table_alone_is_one_table_block() -> None:
    body = SlackFormatter().render((Text(TABLE),)).payload()
    assert [b["type"] for b in body["blocks"]] == ["table"]
    assert body["text"].strip()


def test_only_the_first_table_is_a_block_and_a_second_stays_an_aligned_code_block() -> None:
    second = "| k | v |\n|---|---|\n| x | 1 |"
    body = SlackFormatter().render((Text(f"{TABLE}\nThen:\n\n{second}"),)).payload()
    assert [b["type"] for b in body["blocks"]] == ["table", "markdown"]
    assert body["blocks"][1]["text"] == "Then:\n\n```\nk | v\n--+--\nx | 1\n```"
    # A second Text block's table too: one table a message.
    body = SlackFormatter().render((Text(TABLE), Text(second))).payload()
    assert [b["type"] for b in body["blocks"]] == ["table", "markdown"]
    assert body["blocks"][1]["text"].startswith("```\nk | v")


def test_a_table_over_slacks_limits_is_an_aligned_code_block_and_the_next_one_fits() -> None:
    wide = "|" + "|".join(f"c{i}" for i in range(21)) + "|\n|" + "---|" * 21 + "\n|" + "x|" * 21
    long = "| n |\n|---|\n" + "\n".join(f"| {i} |" for i in range(100))  # 101 rows with the header
    small = "| k | v |\n|---|---|\n| x | 1 |"
    for too_big in (wide, long):
        body = SlackFormatter().render((Text(f"{too_big}\n\n{small}"),)).payload()
        kinds = [b["type"] for b in body["blocks"]]
        assert kinds == ["markdown", "table"], kinds
        assert body["blocks"][0]["text"].startswith("```\n") and body["blocks"][0]["text"].endswith("```")
        assert body["blocks"][1]["rows"][0] == [raw("k"), raw("v")]
    fits = "|" + "|".join(f"c{i}" for i in range(20)) + "|\n|" + "---|" * 20
    [table] = SlackFormatter().render((Text(fits),)).payload()["blocks"]
    assert table["type"] == "table" and len(table["rows"][0]) == 20


def test_plain_keeps_the_table_aligned_text_and_sends_no_blocks_but_buttons() -> None:
    message = SlackFormatter().render((Text(ANSWER),), plain=True)
    body = message.payload((Button("Stop", "tok"),))
    assert [b["type"] for b in body["blocks"]] == ["actions"]
    assert "Name | Size\n-----+-----\na.py |   12" in body["text"] and "**" not in body["text"]


def test_a_table_in_code_or_a_stream_is_never_a_block() -> None:
    code = f"```\n{TABLE}```"
    body = SlackFormatter().render((Text(code),)).payload()
    assert [b["type"] for b in body["blocks"]] == ["markdown"]
    # What a native stream shows (markdown_text only) is the aligned code block.
    growing = SlackFormatter().render((Text(ANSWER),))
    assert ALIGNED in growing.streamable and "| Name |" not in growing.streamable
