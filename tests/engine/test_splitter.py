"""Splitting after rendering: every piece fits, fences survive, UTF-16 is counted (what-users-hit 1)."""

from __future__ import annotations

import html
import re

import pytest

from core.engine.splitter import close_open_fence, plain_text, split_rendered
from core.engine.surface import measure


def escape_dots(text: str) -> str:
    """A MarkdownV2-like renderer: every ``.`` and ``!`` gains a backslash."""
    return text.replace(".", "\\.").replace("!", "\\!")


def html_render(text: str) -> str:
    """A Telegram-HTML-like renderer: entities expand ``<``, ``>`` and ``&``."""
    return html.escape(text, quote=False)


def identity(text: str) -> str:
    return text


def fences_balanced(piece: str) -> bool:
    return len(re.findall(r"(?m)^ {0,3}```", piece)) % 2 == 0


def code_answer(lines: int = 80) -> str:
    body = "\n".join(f"    value_{i} = compute({i}.5)  # step {i}." for i in range(lines))
    return f"Here is the module.\n\n```python\n{body}\n```\n\nThat is all. Run it!"


def test_short_text_is_one_piece() -> None:
    assert split_rendered("hello.", escape_dots, 100, "chars") == ["hello."]


def test_blank_text_is_no_piece() -> None:
    assert split_rendered("\n  \n", escape_dots, 100, "chars") == []


@pytest.mark.parametrize("render", [escape_dots, html_render, identity])
@pytest.mark.parametrize("limit", [120, 500, 2000])
def test_every_rendered_piece_fits_the_limit(render: object, limit: int) -> None:
    text = code_answer() + "\n\n" + " ".join(["a < b && c > d."] * 300)
    pieces = split_rendered(text, render, limit, "utf16")  # type: ignore[arg-type]
    assert len(pieces) > 1
    for piece in pieces:
        assert measure(render(piece), "utf16") <= limit  # type: ignore[operator]


def test_rendering_expansion_is_measured_not_the_raw_length() -> None:
    text = "." * 150  # 150 raw characters, 300 rendered
    pieces = split_rendered(text, escape_dots, 200, "chars")
    assert [len(escape_dots(p)) for p in pieces] == [200, 100]


def test_split_inside_a_fence_closes_and_reopens_it_with_its_info_string() -> None:
    pieces = split_rendered(code_answer(), escape_dots, 600, "chars")
    assert len(pieces) >= 3
    for piece in pieces:
        assert fences_balanced(piece), piece
    for piece in pieces[1:-1]:
        assert piece.startswith("```python\n")
        assert piece.endswith("\n```")
    # Nothing of the code is lost or torn: joining the inner bodies gives the original lines back.
    code_lines = [ln for p in pieces for ln in p.splitlines() if ln.startswith("    value_")]
    assert code_lines == [f"    value_{i} = compute({i}.5)  # step {i}." for i in range(80)]


def test_paragraph_break_is_preferred_over_a_line_break() -> None:
    para1 = "\n".join(["line one of the first paragraph"] * 4)
    para2 = "\n".join(["line of the second paragraph"] * 4)
    pieces = split_rendered(f"{para1}\n\n{para2}", identity, len(para1) + 40, "chars")
    assert pieces == [para1, para2]


def test_line_break_is_preferred_over_a_space() -> None:
    text = "alpha beta gamma delta\nepsilon zeta eta theta iota"
    pieces = split_rendered(text, identity, 30, "chars")
    assert pieces == ["alpha beta gamma delta", "epsilon zeta eta theta iota"]


def test_long_line_is_split_at_spaces() -> None:
    words = " ".join(f"word{i}" for i in range(100))
    pieces = split_rendered(words, identity, 50, "chars")
    assert " ".join(pieces) == words
    assert all(len(p) <= 50 for p in pieces)


def test_single_token_longer_than_the_limit_is_cut_hard() -> None:
    token = "x" * 250
    pieces = split_rendered(token, identity, 100, "chars")
    assert pieces == ["x" * 100, "x" * 100, "x" * 50]


def test_utf16_counts_astral_characters_twice() -> None:
    text = "😀" * 3000  # 3000 characters, 6000 UTF-16 code units
    pieces = split_rendered(text, identity, 4096, "utf16")
    assert [measure(p, "utf16") for p in pieces] == [4096, 1904]
    assert "".join(pieces) == text


def test_hard_cut_does_not_tear_a_zwj_emoji_sequence() -> None:
    family = "👨\u200d👩\u200d👧"
    pieces = split_rendered(family * 40, identity, 21, "utf16")
    for piece in pieces:
        assert not piece.startswith("\u200d") and not piece.endswith("\u200d")
    assert "".join(pieces) == family * 40


def test_telegram_reply_over_4096_after_escaping_is_split() -> None:
    # 3750 raw characters (under 4096) that render to 4250: too long once escaped.
    text = "Step 1. Do it! " * 250
    assert len(text) < 4096 < len(escape_dots(text))
    pieces = split_rendered(text, escape_dots, 4096, "utf16")
    assert len(pieces) == 2
    assert all(measure(escape_dots(p), "utf16") <= 4096 for p in pieces)


def test_open_fence_at_the_end_is_closed() -> None:
    assert close_open_fence("text\n```js\nlet a = 1") == "text\n```js\nlet a = 1\n```"
    assert close_open_fence("```\nclosed\n```") == "```\nclosed\n```"
    pieces = split_rendered("mid-stream\n```py\nx = 1", identity, 100, "chars")
    assert pieces == ["mid-stream\n```py\nx = 1\n```"]


def test_tilde_fences_are_respected() -> None:
    body = "\n".join(f"row {i}" for i in range(40))
    pieces = split_rendered(f"~~~text\n{body}\n~~~", identity, 120, "chars")
    assert len(pieces) > 1
    for piece in pieces:
        assert piece.startswith("~~~text\n") and piece.endswith("\n~~~")


def test_impossible_limit_raises_instead_of_producing_an_over_limit_piece() -> None:
    with pytest.raises(ValueError):
        split_rendered("abc", lambda s: s * 10, 5, "chars")


def test_plain_text_removes_markup_and_escape_debris() -> None:
    md = "**Done!** The _file_ is at [docs](https://x.y/z) \\- see `a_b`.\n```sh\nmake test\n```\n# Title"
    assert plain_text(md) == "Done! The file is at docs (https://x.y/z) - see a_b.\nmake test\nTitle"


def test_plain_text_keeps_identifiers_and_arithmetic() -> None:
    assert plain_text("snake_case_name and 2*3*4") == "snake_case_name and 2*3*4"
    assert plain_text("fix x*y*z, then *this* is emphasis") == "fix x*y*z, then this is emphasis"


def test_plain_text_finds_code_inside_lists_and_quotes() -> None:
    # A fence in a nested list item (indented past three spaces) or in a quote is still code: its
    # text is kept verbatim and its fence lines (with the info string) go.
    md = "1. Build it:\n   - run:\n\n     ```sh\n     echo **not bold** _x_\n     ```\n2. done"
    assert plain_text(md) == "1. Build it:\n   - run:\n\n     echo **not bold** _x_\n2. done"
    quoted = "> quoted *text* and `a*b*c`\n>\n> ```\n> keep __this__\n> ```"
    assert plain_text(quoted) == "> quoted text and a*b*c\n>\n> keep __this__"


def test_plain_text_keeps_tables_lists_and_blank_lines_readable() -> None:
    table = "| name | value |\n|---|---|\n| `a_b` | **bold** \\| pipe |"
    assert plain_text(table) == "| name | value |\n| --- | --- |\n| a_b | bold | pipe |"
    # The columns' alignment stays (an aligned code block made of the plain text still pads right).
    aligned = "| a | b | c |\n|:-:|--:|:--|\n| 1 | 2 | 3 |"
    assert plain_text(aligned) == "| a | b | c |\n| :-: | --: | --- |\n| 1 | 2 | 3 |"
    assert plain_text("3. three\n4. four\n\n* star\n- [ ] task ~~old~~") == (
        "3. three\n4. four\n\n* star\n- [ ] task old")
    assert plain_text("one\n\n\ntwo\nsoft  \nhard") == "one\n\ntwo\nsoft\nhard"


def test_plain_text_spells_out_links_and_images() -> None:
    md = "![diagram](https://x/d.png), <https://a.b/c>, [https://a.b](https://a.b) and [](https://e.f)"
    assert plain_text(md) == "diagram (https://x/d.png), https://a.b/c, https://a.b and https://e.f"
    assert plain_text("&amp; &lt;tag&gt; <b>as typed</b>") == "& <tag> <b>as typed</b>"
