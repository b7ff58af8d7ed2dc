"""Split neutral Markdown into pieces whose RENDERED form fits a platform's limit.

``split_rendered`` returns pieces of NEUTRAL Markdown, because ``Surface.send`` takes neutral
Markdown and renders it itself; every returned piece ``p`` satisfies
``measure(render(p), unit) <= limit`` (checked on the exact piece, never estimated), or the
function raises ``ValueError`` when not even one character fits.

Preference for the cut: a paragraph break, then a line break, then a space, then anywhere (never
between a character and its combining mark / ZWJ partner). A cut inside a code fence closes the
fence at the end of the piece and reopens it, with the same info string, at the start of the next.
A fence still open at the end of the input (an answer mid-stream) is closed.

A ``Splitter`` does the same for a text that grows (an answer being streamed): a piece whose cut
looked only at text that has not changed since the last call is kept, so only the open tail is cut
again and rendered again, and streaming a long answer costs time in proportion to its length.
``plain_text`` (in ``core.engine.plaintext``) removes the markup for a platform that rejected it.

The splitter measures through a ``shape`` function: ``Splitter.shaped`` takes one that renders a
candidate piece (knowing where in the text it starts) into whatever the caller sends, with its
``length``; the pieces come back with the very shapes that were measured (``split_shown``), so
nothing is rendered again to be sent. This module also holds the relay's one reading of code fences
(``code_lines``, ``open_fence``): a surface that treats code differently asks it, never a regex of
its own.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from core.engine.plaintext import plain_text
from core.engine.surface import LengthUnit, measure

__all__ = ["Shaped", "Splitter", "close_open_fence", "code_lines", "open_fence", "plain_text", "split_rendered"]

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})([^`]*)$")
_LEADING_BLANK_LINES = re.compile(r"(?:[ \t]*\n)+")
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


#: A place to cut: (where the piece ends, where the rest starts, the fence open there).
_Cut = tuple[int, int, "_Fence | None"]


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


def open_fence(markdown: str) -> str | None:
    """The opening line (e.g. ```` ```python ````) of a code block still open at the end of ``markdown``."""
    lines = _lines(markdown)
    fence = lines[-1].after if lines else None
    return None if fence is None else fence.opener


def code_lines(markdown: str) -> list[tuple[str, bool]]:
    """Each line of ``markdown`` and whether it is code: inside a fenced block, or one of its fence lines."""
    return [(markdown[ln.start:ln.end], ln.delimiter or ln.before is not None) for ln in _lines(markdown)]


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


class _Positions(Sequence[_Cut]):
    """Every hard cut of a window, in order, without listing them: runs of positions inside lines
    (a position that would tear a character moves left to the nearest one that does not) and the
    line ends between them."""

    def __init__(self, text: str, runs: list[tuple[int, int, _Fence | None, bool]]) -> None:
        self.text = text
        self.runs = runs  # (first position, count, fence, line end), in order
        self.starts: list[int] = []
        total = 0
        for _, count, _, _ in runs:
            self.starts.append(total)
            total += count
        self.total = total

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, i: int) -> _Cut:  # type: ignore[override]  # (no slices: a binary search indexes)
        if i < 0:
            i += self.total
        if not 0 <= i < self.total:
            raise IndexError(i)
        run = bisect.bisect_right(self.starts, i) - 1
        first, _, fence, line_end = self.runs[run]
        p = first + i - self.starts[run]
        if line_end:
            return p, p + 1, fence
        while first < p < len(self.text) and _unbreakable(self.text, p):
            p -= 1
        return p, p, fence


class _Cutter:
    def __init__(self, rest: str, fits: Callable[[str], bool], window: int) -> None:
        self.rest = rest
        self.fits = fits
        end = rest.find("\n", window)
        self.scan_end = len(rest) if end == -1 else end  # how far the cut looks
        self.lines = _lines(rest[: self.scan_end])
        self.window = window

    def make(self, head_end: int, rest_start: int, fence: _Fence | None) -> tuple[str, str, int] | None:
        """The piece, and the rest as ``carry + rest[j:]``: (piece, carry, j); None: no progress."""
        rest = self.rest
        if fence is None:
            head = rest[:head_end].rstrip()
            blank = _LEADING_BLANK_LINES.match(rest, rest_start)
            return (head, "", blank.end() if blank else rest_start) if head.strip() else None
        if rest_start <= fence.content_start:
            return None  # nothing of the block would be in this piece: no progress
        return rest[:head_end].rstrip("\n") + "\n" + fence.marker, fence.opener + "\n", rest_start

    def hard(self) -> _Positions:
        runs: list[tuple[int, int, _Fence | None, bool]] = []
        last = len(self.rest)
        for ln in self.lines:
            if ln.delimiter:
                if ln.start > 0 and ln.start <= self.window:
                    runs.append((ln.start, 1, ln.before, False))
            else:
                lo, hi = max(ln.start, 1), min(ln.end, self.window + 1)
                if hi > lo:
                    runs.append((lo, hi - lo, ln.before, False))
            if 0 < ln.end < last and ln.end <= self.window:
                runs.append((ln.end, 1, ln.after, True))
        return _Positions(self.rest, runs)

    def breaks(self) -> tuple[list[_Cut], list[_Cut]]:
        """Paragraph breaks and line breaks, in order."""
        para: list[_Cut] = []
        line: list[_Cut] = []
        text, last = self.rest, len(self.rest)
        for i, ln in enumerate(self.lines):
            if 0 < ln.end < last and ln.end <= self.window:
                cut = (ln.end, ln.end + 1, ln.after)
                line.append(cut)
                nxt = self.lines[i + 1] if i + 1 < len(self.lines) else None
                if nxt is not None and not text[nxt.start:nxt.end].strip():
                    para.append(cut)
        return para, line

    def spaces(self, upto: int) -> list[_Cut]:
        out: list[_Cut] = []
        text = self.rest
        for ln in self.lines:
            if ln.start >= upto:
                break
            if ln.delimiter:
                continue
            hi = min(ln.end, self.window + 1, upto + 1)
            p = text.find(" ", ln.start + 1, hi)
            while p != -1:
                out.append((p, p + 1, ln.before))
                p = text.find(" ", p + 1, hi)
        return out

    def largest(self, cands: Sequence[_Cut]) -> tuple[int, str, str, int] | None:
        """The longest candidate whose piece fits; the last one is tried first (often it does)."""
        if not cands:
            return None
        made = self.make(*cands[-1])
        if made is not None and self.fits(made[0]):
            return cands[-1][0], *made
        best: tuple[int, str, str, int] | None = None
        lo, hi = 0, len(cands) - 2
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

    def cut(self) -> tuple[str, str, int]:
        longest = self.largest(self.hard())
        if longest is None:
            return self.cut_ignoring_fences()
        at = longest[0]
        para, line = self.breaks()
        for tier in (para, line, None):
            cands = self.spaces(at) if tier is None else tier
            cands = cands[: bisect.bisect_right([c[0] for c in cands], at)]
            if not cands or cands[-1][0] < _GOOD_ENOUGH * at:
                continue
            found = self.largest(cands)
            if found is not None and found[0] >= _GOOD_ENOUGH * at:
                return found[1:]
        return longest[1:]

    def cut_ignoring_fences(self) -> tuple[str, str, int]:
        # A fence opener (or its closer) alone is over the limit; cutting the raw text is all
        # that is left. Still checked against the limit.
        top = min(self.window, len(self.rest))
        found = self.largest(_Positions(self.rest, [(1, top, None, False)]) if top >= 1 else [])
        if found is None:
            raise ValueError("the limit is too small to hold a single rendered character")
        head, carry, j = found[1:]
        if carry:  # a fence cut: the raw text gives the piece as it is, and the rest after it
            return self.rest[:found[0]], "", found[0]
        return head, carry, j


class Shaped(Protocol):
    """A piece as it will be shown: its ``length`` is what the limit applies to."""

    @property
    def length(self) -> int:
        """The length the platform counts."""
        ...


#: Shape a candidate piece: (the piece, where its own text starts in the text being split, the fence
#: opener carried in front of it) -> what will be shown.
Shape = Callable[[str, int, str], Shaped]


@dataclass(frozen=True, slots=True)
class _Measured:
    length: int


@dataclass(frozen=True, slots=True)
class _Mark:
    """One cut: its piece, where the rest starts (``carry`` + the text from ``offset``), and how far
    into the text the cut looked (-1: to its end, so it is cut again once the text grows)."""

    piece: str
    offset: int
    carry: str
    scanned: int
    shown: Shaped


class Splitter:
    """``split_rendered`` for one growing text: call ``split`` with each new state of it."""

    def __init__(self, render: Callable[[str], str], limit: int, unit: LengthUnit) -> None:
        self._init(lambda piece, _at, _carry: _Measured(measure(render(piece), unit)), limit)

    @classmethod
    def shaped(cls, shape: Shape, limit: int) -> Splitter:
        """A splitter that measures each candidate piece by ``shape`` (see ``Shape``)."""
        self = cls.__new__(cls)
        self._init(shape, limit)
        return self

    def _init(self, shape: Shape, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be positive")
        self.limit = limit
        self._shape = shape
        self._text = ""  # the last text split, fences closed
        self._marks: list[_Mark] = []
        self._at = (0, "")  # where the rest being cut starts: (offset in the text, carry before it)
        self._shapes: dict[str, Shaped] = {}  # the candidates measured for the cut being made

    def _fits(self, piece: str) -> bool:
        shown = self._shapes.get(piece)
        if shown is None:
            shown = self._shapes[piece] = self._shape(piece, *self._at)
        return shown.length <= self.limit

    def _shown(self, piece: str) -> Shaped:
        """What ``piece`` was measured as (shaped now if the cut made a piece it never measured)."""
        return self._shapes.get(piece) or self._shape(piece, *self._at)

    def split(self, markdown: str, *, stable: int | None = None) -> list[str]:
        """The pieces of ``markdown``; cuts that looked only at text unchanged since the last call
        (and, with ``stable``, only before that offset) are kept (their pieces are the same strings)."""
        return [piece for piece, _ in self.split_shown(markdown, stable=stable)]

    def split_shown(self, markdown: str, *, stable: int | None = None) -> list[tuple[str, Shaped]]:
        """``split``, each piece with the shape it was measured as."""
        text = markdown.strip("\n").rstrip()
        marks = self._marks[: self._kept(text, len(text) if stable is None else stable)]
        offset, carry = (marks[-1].offset, marks[-1].carry) if marks else (0, "")
        out = [(m.piece, m.shown) for m in marks]
        # The carry says whether the kept pieces ended inside a code block, so scanning the rest
        # finds a block still open at the end as a scan of the whole text would.
        rest = close_open_fence(carry + text[offset:])
        while rest.strip():
            self._at, self._shapes = (offset, carry), {}
            window = min(len(rest), 2 * self.limit + 64)
            while self._fits(rest[:window]):
                if window == len(rest):
                    out.append((rest, self._shown(rest)))
                    rest = ""
                    break
                window = min(len(rest), 2 * window)
            if not rest:
                break
            cutter = _Cutter(rest, self._fits, window)
            head, new_carry, j = cutter.cut()
            shown = self._shown(head)
            scanned = -1 if cutter.scan_end >= len(rest) else offset + max(0, cutter.scan_end - len(carry))
            rest = new_carry + rest[j:]
            if j >= len(carry):
                offset, carry = offset + j - len(carry), new_carry
            else:  # the cut fell inside the carried fence opener
                carry = new_carry + carry[j:]
            marks.append(_Mark(head, offset, carry, scanned, shown))
            out.append((head, shown))
        self._text, self._marks, self._shapes = text, marks, {}
        return out

    def _kept(self, text: str, stable: int) -> int:
        """How many earlier cuts still hold: the text they looked at is unchanged (and before ``stable``)."""
        marks = self._marks
        n = 0
        while n < len(marks) and 0 <= marks[n].scanned <= min(len(text), stable):
            n += 1
        lo, hi = 0, n  # the answer is in [lo, hi]; a cut holds only if every one before it does
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if text.startswith(self._text[: marks[mid - 1].scanned]):
                lo = mid
            else:
                hi = mid - 1
        return lo


def split_rendered(markdown: str, render: Callable[[str], str], limit: int,
                   unit: LengthUnit) -> list[str]:
    """Split ``markdown`` into neutral pieces each rendering to at most ``limit`` ``unit``s.

    ``render`` may expand the text (escapes, entities), so every piece is measured after
    rendering. Empty or blank input gives ``[]``.
    """
    return Splitter(render, limit, unit).split(markdown)
