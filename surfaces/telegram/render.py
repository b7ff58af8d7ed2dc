"""The Telegram formatter: the core's blocks -> Telegram text plus ``MessageEntity`` list
(telegramify-markdown), rendered once per message (``TelegramFormatter``).

Telegram draws no block its own way: a piece's blocks are shown as their neutral Markdown.

Entities instead of a ``parse_mode``: there is nothing to escape, so no reply shows stray ``\\!``,
and the text Telegram counts against its 4096 UTF-16 units is exactly the text we measure
(``render`` returns it). Two choices differ from the library's defaults:

* Headings are bold and underlined without an emoji in front, and bullets are ``•``.
* HTML in the agent's text is kept as text. Telegram messages cannot show HTML, and the library
  drops it (``Vec<String>`` would read ``Vec``), so a ``<`` that would open a tag is escaped first
  (found with the same parser, so code spans and blocks are left as they are).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import pyromark
from telegram import MessageEntity
from telegramify_markdown import RenderConfig, convert
from telegramify_markdown.converter import STANDARD_OPTIONS

from core.surface_api import (
    Block,
    FormCard,
    markdown_of,
    measure,
)

__all__ = ["TelegramFormatter", "TelegramMessage", "literal_html", "render"]

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


@dataclass(frozen=True, slots=True)
class TelegramMessage:
    """What one ``sendMessage`` shows: the text, its entities, and its length in UTF-16 units."""

    text: str
    entities: tuple[MessageEntity, ...]
    length: int
    #: A form asks a question answered by writing: the words of the reply box to open (force_reply).
    asks: str = ""


class TelegramFormatter:
    """Blocks as Telegram text and entities (``render``); plain text as it is, with no entities."""

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> TelegramMessage:
        """The message Telegram shows; Markdown that renders to nothing is shown as written."""
        markdown = markdown_of(blocks)
        text, found = (markdown, []) if plain else render(markdown)
        if not text.strip() and markdown.strip():  # nothing left once rendered: the Markdown beats nothing
            text, found = markdown, []
        asks = next((b.question for b in blocks if isinstance(b, FormCard) and b.reply_wanted), "")
        return TelegramMessage(text, tuple(found), measure(text, "utf16"), asks)
