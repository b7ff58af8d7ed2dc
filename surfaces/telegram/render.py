"""Neutral Markdown -> Telegram text plus ``MessageEntity`` list (telegramify-markdown).

Entities instead of a ``parse_mode``: there is nothing to escape, so no reply shows stray ``\\!``,
and the text Telegram counts against its 4096 UTF-16 units is exactly the text we measure
(``render`` returns it). Two choices differ from the library's defaults:

* Headings are bold and underlined without an emoji in front, and bullets are ``•``.
* HTML in the agent's text is kept as text. Telegram messages cannot show HTML, and the library
  drops it (``Vec<String>`` would read ``Vec``), so a ``<`` that would open a tag is escaped first
  (found with the same parser, so code spans and blocks are left as they are).
"""

from __future__ import annotations

from itertools import pairwise

import pyromark
from telegram import MessageEntity
from telegramify_markdown import RenderConfig, convert
from telegramify_markdown.converter import STANDARD_OPTIONS

__all__ = ["entities", "literal_html", "render", "render_text"]

_CONFIG = RenderConfig.isolated()
_symbols = _CONFIG.markdown_symbol
_symbols.heading_level_1 = _symbols.heading_level_2 = _symbols.heading_level_3 = _symbols.heading_level_4 = ""
_symbols.unordered_list_item = "•"

#: A tag escaped per pass re-parses the lines after it; this bounds the passes on hostile input.
_MAX_PASSES = 64


def _tag_openings(source: bytes, markdown: str) -> list[int]:
    """UTF-8 byte offsets of every ``<`` that the parser reads as the start of HTML."""
    offsets: list[int] = []
    for payload, where in pyromark.events_with_range(markdown, options=STANDARD_OPTIONS):
        if not isinstance(payload, dict):
            continue
        html = payload.get("InlineHtml") or payload.get("Html")
        if not html:
            continue
        start = where["start"]
        while start < where["end"] and source[start:start + 1] in (b" ", b"\t"):
            start += 1
        if source[start:start + 1] == b"<":
            offsets.append(start)
    return offsets


def literal_html(markdown: str) -> str:
    """``markdown`` with each HTML tag escaped (``\\<div>``), so it renders as the text it is."""
    if "<" not in markdown:
        return markdown
    for _ in range(_MAX_PASSES):
        source = markdown.encode("utf-8")
        offsets = _tag_openings(source, markdown)
        if not offsets:
            break
        bounds = [0, *sorted(set(offsets)), len(source)]
        markdown = b"\\".join(source[a:b] for a, b in pairwise(bounds)).decode("utf-8")
    return markdown


def render(markdown: str) -> tuple[str, list[MessageEntity]]:
    """The text Telegram shows and its entities (offsets in UTF-16 units, as the Bot API counts)."""
    text, found = convert(literal_html(markdown), config=_CONFIG)
    return text, [MessageEntity(**e.to_dict()) for e in found]


def render_text(markdown: str) -> str:
    """Only the text of ``render``: what Telegram measures against its length limit."""
    return render(markdown)[0]


def entities(markdown: str) -> list[MessageEntity]:
    """Only the entities of ``render``."""
    return render(markdown)[1]
