"""Split neutral Markdown into pieces whose RENDERED form fits a platform's limit.

``split_rendered`` returns pieces of NEUTRAL Markdown, because ``Surface.send`` takes neutral
Markdown and renders it itself; every returned piece ``p`` satisfies
``measure(render(p), unit) <= limit`` (checked on the exact piece, never estimated), or the
function raises ``ValueError`` when not even one character fits.

Preference for the cut: a paragraph break, then a line break, then a space, then anywhere (never
between a character and its combining mark / ZWJ partner). A cut inside a code fence closes the
fence at the end of the piece and reopens it, with the same info string, at the start of the next.
A fence still open at the end of the input (an answer mid-stream) is closed.

``plain_text`` removes the markup for a platform that rejected it; it parses the Markdown with
markdown-it-py. The splitter itself scans lines for fences: it runs on every streamed edit, and
needs character offsets, which a parse does not give.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from core.engine.surface import LengthUnit, measure

__all__ = ["close_open_fence", "plain_text", "split_rendered"]

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})([^`]*)$")
_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t]*\n)+")
#: A cut is accepted at a preferred boundary if it keeps at least this share of the longest cut.
_GOOD_ENOUGH = 0.5


@dataclass(frozen=True, slots=True)
class _Fence:
    marker: str  # e.g. ``` or ~~~~
    opener: str  # the opening line without indentation, e.g. ```python
    content_start: int  # offset of the first character after the opening line


@dataclass(frozen=True, slots=True)
class _Line:
    start: int
    end: int  # offset of the newline (or of the end of the text)
    delimiter: bool
    before: _Fence | None
    after: _Fence | None


def _lines(text: str) -> list[_Line]:
    out: list[_Line] = []
    fence: _Fence | None = None
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        m = _FENCE.match(text, start, end)
        before = fence
        delimiter = False
        if m and fence is None:
            fence = _Fence(m.group(1), text[start:end].lstrip(" "), end + 1)
            delimiter = True
        elif (m and fence is not None and m.group(1)[0] == fence.marker[0]
              and len(m.group(1)) >= len(fence.marker) and not m.group(2).strip()):
            fence = None
            delimiter = True
        out.append(_Line(start, end, delimiter, before, fence))
        start = end + 1
    return out


def close_open_fence(markdown: str) -> str:
    """``markdown`` with a code fence left open at its end closed (a reply mid-stream)."""
    lines = _lines(markdown)
    fence = lines[-1].after if lines else None
    if fence is None:
        return markdown
    return markdown.rstrip("\n") + "\n" + fence.marker


def _unbreakable(text: str, p: int) -> bool:
    """True where a hard cut would tear a character from its mark, ZWJ partner or modifier."""
    a, b = text[p - 1], text[p]
    return (unicodedata.combining(b) != 0 or b in "\u200d\ufe0e\ufe0f" or a == "\u200d"
            or "\U0001f3fb" <= b <= "\U0001f3ff" or (a == "\r" and b == "\n")
            or ("\U0001f1e6" <= a <= "\U0001f1ff" and "\U0001f1e6" <= b <= "\U0001f1ff"))


class _Cutter:
    def __init__(self, rest: str, fits: Callable[[str], bool], window: int) -> None:
        self.rest = rest
        self.fits = fits
        end = rest.find("\n", window)
        self.lines = _lines(rest[: len(rest) if end == -1 else end])
        self.window = window

    def make(self, head_end: int, rest_start: int, fence: _Fence | None) -> tuple[str, str] | None:
        head, tail = self.rest[:head_end], self.rest[rest_start:]
        if fence is None:
            head, tail = head.rstrip(), _LEADING_BLANK_LINES.sub("", tail)
            return (head, tail) if head.strip() else None
        if rest_start <= fence.content_start:
            return None  # nothing of the block would be in this piece: no progress
        return head.rstrip("\n") + "\n" + fence.marker, fence.opener + "\n" + tail

    def tiers(self) -> list[list[tuple[int, int, _Fence | None]]]:
        para: list[tuple[int, int, _Fence | None]] = []
        line: list[tuple[int, int, _Fence | None]] = []
        space: list[tuple[int, int, _Fence | None]] = []
        hard: list[tuple[int, int, _Fence | None]] = []
        text = self.rest
        for i, ln in enumerate(self.lines):
            for p in range(ln.start, min(ln.end, self.window + 1)):
                if p == 0 or (ln.delimiter and p > ln.start):
                    continue
                fence = ln.before
                if p > ln.start and text[p] == " ":
                    space.append((p, p + 1, fence))
                if p == ln.start or not _unbreakable(text, p):
                    hard.append((p, p, fence))
            if ln.end < len(text) and ln.end <= self.window and ln.end > 0:
                cut = (ln.end, ln.end + 1, ln.after)
                line.append(cut)
                hard.append(cut)
                nxt = self.lines[i + 1] if i + 1 < len(self.lines) else None
                if nxt is not None and not text[nxt.start:nxt.end].strip():
                    para.append(cut)
        return [para, line, space, hard]

    def largest(self, cands: list[tuple[int, int, _Fence | None]]) -> tuple[int, str, str] | None:
        best: tuple[int, str, str] | None = None
        lo, hi = 0, len(cands) - 1
        while lo <= hi:  # rendered length grows with the prefix, nearly always monotonically
            mid = (lo + hi) // 2
            made = self.make(*cands[mid])
            if made is not None and self.fits(made[0]):
                best, lo = (cands[mid][0], *made), mid + 1
            elif made is None:
                lo = mid + 1
            else:
                hi = mid - 1
        return best

    def cut(self) -> tuple[str, str]:
        para, line, space, hard = self.tiers()
        longest = self.largest(hard)
        if longest is None:
            return self.cut_ignoring_fences()
        for tier in (para, line, space):
            found = self.largest([c for c in tier if c[0] <= longest[0]])
            if found is not None and found[0] >= _GOOD_ENOUGH * longest[0]:
                return found[1], found[2]
        return longest[1], longest[2]

    def cut_ignoring_fences(self) -> tuple[str, str]:
        # A fence opener (or its closer) alone is over the limit; cutting the raw text is all
        # that is left. Still checked against the limit.
        found = self.largest([(p, p, None) for p in range(1, min(self.window, len(self.rest)) + 1)])
        if found is None:
            raise ValueError("the limit is too small to hold a single rendered character")
        return found[1], found[2]


def split_rendered(markdown: str, render: Callable[[str], str], limit: int,
                   unit: LengthUnit) -> list[str]:
    """Split ``markdown`` into neutral pieces each rendering to at most ``limit`` ``unit``s.

    ``render`` may expand the text (escapes, entities), so every piece is measured after
    rendering. Empty or blank input gives ``[]``.
    """
    if limit < 1:
        raise ValueError("limit must be positive")

    def fits(piece: str) -> bool:
        return measure(render(piece), unit) <= limit

    rest = close_open_fence(markdown.strip("\n").rstrip())
    pieces: list[str] = []
    while rest.strip():
        window = min(len(rest), 2 * limit + 64)
        while fits(rest[:window]):
            if window == len(rest):
                pieces.append(rest)
                return pieces
            window = min(len(rest), 2 * window)
        head, rest = _Cutter(rest, fits, window).cut()
        pieces.append(head)
    return pieces


# CommonMark, plus the two GFM extensions agents use (tables, ~~strikethrough~~). No raw HTML: an
# agent's "<b>" is text, as a chat shows it.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
_BLANK = re.compile(r"[\s>]*")  # a blank line, also inside a block quote


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
        return [*lines[:1], "|" + "|".join(" --- " for _ in rows[0]) + "|", *lines[1:]] if rows else []
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
