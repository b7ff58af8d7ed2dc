"""Split neutral Markdown into pieces whose RENDERED form fits a platform's limit.

``split_rendered`` returns pieces of NEUTRAL Markdown, because ``Surface.send`` takes neutral
Markdown and renders it itself; every returned piece ``p`` satisfies
``measure(render(p), unit) <= limit`` (checked on the exact piece, never estimated), or the
function raises ``ValueError`` when not even one character fits.

Preference for the cut: a paragraph break, then a line break, then a space, then anywhere (never
between a character and its combining mark / ZWJ partner). A cut inside a code fence closes the
fence at the end of the piece and reopens it, with the same info string, at the start of the next.
A fence still open at the end of the input (an answer mid-stream) is closed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

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


_CODE = re.compile(r"(?ms)^ {0,3}(`{3,}|~{3,})[^\n`]*\n(.*?)(?:^ {0,3}\1[ \t]*$\n?|\Z)|(`+)(.+?)\3")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\(([^)\s]+)\)")
_EMPHASIS = re.compile(r"(\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\3(?![\w*])")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_HEADING = re.compile(r"(?m)^ {0,3}#{1,6}[ \t]+")


def plain_text(markdown: str) -> str:
    """Neutral Markdown with its markup removed, for a platform that rejected the markup.

    Code keeps its text (fence lines and backticks go), links become ``text (url)``, emphasis
    markers, heading marks and backslash escapes are dropped, so no escape debris such as
    ``\\!`` is shown. Lists, checkboxes and tables stay as they read fine as text.
    """
    out: list[str] = []
    pos = 0
    for m in _CODE.finditer(markdown):
        out.append(_plain_prose(markdown[pos:m.start()]))
        out.append(m.group(2) if m.group(1) else m.group(4))
        pos = m.end()
    out.append(_plain_prose(markdown[pos:]))
    return "".join(out).strip("\n")


def _plain_prose(text: str) -> str:
    text = _HEADING.sub("", text)
    text = _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2) or not m.group(1)
                     else f"{m.group(1)} ({m.group(2)})", text)
    for _ in range(3):  # nested emphasis such as ***x***
        text = _EMPHASIS.sub(lambda m: m.group(2) if m.group(1) else m.group(4), text)
    return _ESCAPE.sub(r"\1", text)
