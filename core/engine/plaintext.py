"""Neutral Markdown as plain text, for a platform that rejected the markup.

It parses the Markdown with markdown-it-py (CommonMark plus tables and strikethrough), so code is
found exactly wherever it sits.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

__all__ = ["plain_text"]

# CommonMark, plus the two GFM extensions agents use (tables, ~~strikethrough~~). No raw HTML: an
# agent's "<b>" is text, as a chat shows it.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
_BLANK = re.compile(r"[\s>]*")  # a blank line, also inside a block quote
#: A header cell's style (markdown-it's) -> the delimiter that says it, so the alignment survives.
_RULES = {"text-align:center": ":-:", "text-align:right": "--:"}


def plain_text(markdown: str) -> str:
    """Neutral Markdown with its markup removed, for a platform that rejected the markup.

    Parsed as CommonMark (markdown-it-py), so code is found exactly wherever it sits (in a list, a
    quote, a table cell): code keeps its text, fence lines and backticks go. Links become
    ``text (url)``, images ``alt (url)``; emphasis markers, heading marks and backslash escapes are
    dropped, so no escape debris such as ``\\!`` is shown. Lists, checkboxes, quotes and tables
    stay, as they read fine as text; a blank line stays where the source had one.
    """
    lines = markdown.splitlines()
    return "\n".join(_blocks(SyntaxTreeNode(_MARKDOWN.parse(markdown)), lines)).strip("\n")


def _blocks(node: SyntaxTreeNode, source: list[str]) -> list[str]:
    out: list[str] = []
    for i, child in enumerate(node.children):
        start = child.map[0] if child.map else 0
        if i and 0 < start <= len(source) and _BLANK.fullmatch(source[start - 1]):
            out.append("")
        out += _block(child, source)
    return out


def _block(node: SyntaxTreeNode, source: list[str]) -> list[str]:
    kind = node.type
    if kind in ("paragraph", "heading"):
        return _inline(node.children[0]).split("\n") if node.children else []
    if kind in ("fence", "code_block"):
        return node.content.removesuffix("\n").split("\n")
    if kind == "hr":
        return [node.markup]
    if kind == "blockquote":
        return [f"> {line}" if line else ">" for line in _blocks(node, source)]
    if kind == "list_item":
        marker = f"{node.info}{node.markup} "  # info is an ordered item's number
        lines = _blocks(node, source) or [""]
        return [marker + lines[0]] + [" " * len(marker) + line if line else "" for line in lines[1:]]
    if kind == "table":
        rows = [[_inline(cell.children[0]) if cell.children else "" for cell in row.children]
                for section in node.children for row in section.children]
        lines = ["| " + " | ".join(row) + " |" for row in rows]
        header = node.children[0].children[0].children if rows else []
        rule = "|" + "|".join(f" {_RULES.get(str(cell.attrs.get('style', '')), '---')} " for cell in header) + "|"
        return [*lines[:1], rule, *lines[1:]] if rows else []
    return _blocks(node, source)


def _inline(node: SyntaxTreeNode) -> str:
    parts = node.children
    return "".join(_span(span, parts[i - 1] if i else None, parts[i + 1] if i + 1 < len(parts) else None)
                   for i, span in enumerate(parts))


def _span(node: SyntaxTreeNode, before: SyntaxTreeNode | None, after: SyntaxTreeNode | None) -> str:
    kind = node.type
    if kind in ("text", "code_inline", "html_inline"):
        return node.content
    if kind in ("softbreak", "hardbreak"):
        return "\n"
    if kind in ("link", "image"):
        text, url = _inline(node), str(node.attrs.get("href" if kind == "link" else "src", ""))
        return text if text == url or not url else f"{text} ({url})" if text else url
    inner = _inline(node)
    # CommonMark sees emphasis in 2*3*4; in an agent's answer that is arithmetic: kept as written.
    if node.markup.startswith("*") and _word_end(before, -1) and _word_end(after, 0):
        return node.markup + inner + node.markup
    return inner


def _word_end(node: SyntaxTreeNode | None, at: int) -> bool:
    """True when ``node`` is text whose first (``at`` 0) or last (-1) character is a letter or digit."""
    return node is not None and node.type == "text" and bool(node.content) and node.content[at].isalnum()
