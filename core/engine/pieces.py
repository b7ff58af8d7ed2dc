"""What a platform is shown of a reply: its blocks redacted, then cut at the platform's limit, each
piece rendered once by the surface's formatter.

Every block bound for a platform passes here, so no secret reaches a chat. A part's blocks are laid
out as their neutral wording, one paragraph each, and cut there by a ``Splitter`` (paragraph breaks
first, code fences closed and reopened) that measures each candidate piece by rendering the blocks
it holds with the surface's ``Formatter``: the rendered piece that fitted is the one sent. Each
thread of a reply keeps its own splitter: while the reply grows, only its open tail is cut (and
rendered) again.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from core.engine.blocks import Block, Formatter, Part, Text, markdown_of, rendered_as
from core.engine.splitter import Splitter, open_fence, plain_text
from core.engine.streamed import Layout, Piece, Span, Thread
from core.redact import redact, unfinished_secret_at

__all__ = ["Pieces"]

#: ``MessageTooLong`` shrinks the limit by this factor, down to ``_MIN_LIMIT``.
_SHRINK = 0.8
_MIN_LIMIT = 32


def _layout(blocks: Sequence[Block], plain: bool) -> Layout:
    """The blocks' wording, one paragraph each, trimmed as the splitter trims it; where each block is."""
    spans: list[Span] = []
    texts: list[str] = []
    at = 0
    for block in blocks:
        words = block.markdown()
        if not words:
            continue
        if texts:
            at += 2
        spans.append(Span(at, at + len(words), block))
        texts.append(words)
        at += len(words)
    whole = "\n\n".join(texts)
    text = whole.strip("\n").rstrip()
    lead = len(whole) - len(whole.lstrip("\n"))
    laid: list[Span] = []
    seen_text = False
    for span in spans:
        start, end = max(0, span.start - lead), min(len(text), span.end - lead)
        if start >= end:
            continue
        block = span.block
        if end - start != span.end - span.start:  # trimmed as the splitter trims: what is left of it
            block = Text(text[start:end])
        # A block after an answer whose code block was left open is inside that block: no card, no footer.
        code = seen_text and not isinstance(block, Text) and open_fence(text[:start]) is not None
        seen_text = seen_text or isinstance(block, Text)
        laid.append(Span(start, end, block, code))
    return Layout(text, tuple(laid), plain)


def _stable(old: Layout | None, new: Layout) -> int:
    """Up to where ``new`` holds the same blocks at the same places as ``old`` (a cut that looked only
    at text before this may be kept; the text itself is compared by the splitter)."""
    if old is None:
        return 0
    for was, now in zip(old.spans, new.spans, strict=False):
        if (was.start, type(was.block), was.code) != (now.start, type(now.block), now.code):
            return min(was.start, now.start)
        if not isinstance(now.block, Text) and (was.end, was.block) != (now.end, now.block):
            return now.start
    if len(old.spans) == len(new.spans):
        return len(new.text)
    return (new.spans[len(old.spans)] if len(new.spans) > len(old.spans) else old.spans[len(new.spans)]).start


def _segments(layout: Layout, piece: str, at: int, carry: str) -> Part:
    """The blocks ``piece`` shows: ``piece`` is ``carry`` (a fence opener carried over from the piece
    before), the layout's text from ``at`` on, and perhaps a fence closer the splitter added."""
    text = layout.text
    if not piece.startswith(carry):
        return (Text(piece),)  # a piece of the carried opener itself (a limit too small for one line)
    body, suffix = piece[len(carry):] if carry else piece, ""
    if not text.startswith(body, at):
        cut = body.rfind("\n")
        if cut < 0 or not text.startswith(body[:cut], at):
            return (Text(piece),)
        body, suffix = body[:cut], body[cut:]
    stop = at + len(body)
    spans = [span for span in layout.spans if span.end > at and span.start < stop]
    if len(spans) == 1 and (isinstance(spans[0].block, Text) or (at, stop) != (spans[0].start, spans[0].end)):
        return (Text(piece, closer=suffix),)  # within one block (the usual piece of a long answer): as it is
    out: list[Block] = []
    for span in spans:
        start, end = max(span.start, at), min(span.end, stop)
        whole = (start, end) == (span.start, span.end) and not span.code
        out.append(span.block if whole else Text(text[start:end]))
    if carry:
        out[:1] = [Text(carry + (out[0].markdown() if out else ""))]
    if suffix:
        out[-1] = Text(out[-1].markdown() + suffix, closer=suffix)
    return tuple(out)


class Pieces:
    """Cuts reply blocks for one conversation of one surface."""

    def __init__(self, formatter: Formatter, limit: int) -> None:
        self.formatter = formatter
        self.limit = limit
        self._redacted: dict[str, str] = {}  # paragraph -> redacted, for the streaming flushes
        self._scrubbed: dict[Block, Block] = {}  # a block other than text -> redacted, likewise

    def shrink(self) -> bool:
        """The platform said a piece was too long: cut smaller from now on; False when it cannot."""
        smaller = int(self.limit * _SHRINK)
        if smaller < _MIN_LIMIT:
            return False
        self.limit = smaller
        return True

    def of(self, thread: Thread, part: Part, *, final: bool = True) -> list[Piece]:
        """The pieces ``thread`` shows of ``part`` (as plain text where its markup was rejected).

        A part that did not change since the last call (the same blocks, cut the same way) costs nothing.
        """
        key = (thread.plain, self.limit)
        memo = thread.cut
        if memo is not None and memo[0] == key and memo[1] == final and (memo[2] is part or memo[2] == part):
            return memo[3]
        blocks = self.redact(part, final)
        if thread.plain:
            blocks = (Text(plain_text(markdown_of(blocks))),)
        layout = _layout(blocks, thread.plain)
        if thread.splitter is None or thread.split_for != key:
            thread.splitter = Splitter.shaped(partial(self._shape, thread), self.limit)
            thread.split_for, thread.layout = key, None
        stable = _stable(thread.layout, layout)
        thread.layout = layout
        out = [rendered_as(shown, Piece) for _, shown in thread.splitter.split_shown(layout.text, stable=stable)]
        thread.cut = (key, final, part, out)
        return out

    def _shape(self, thread: Thread, piece: str, at: int, carry: str) -> Piece:
        layout = thread.layout
        assert layout is not None  # set before every split
        blocks = _segments(layout, piece, at, carry)
        return Piece(piece, blocks, self.formatter.render(blocks, plain=layout.plain))

    def one(self, part: Part, *, plain: bool = False) -> Piece:
        """``part`` as one piece, redacted and rendered whole (a note, a caption: never cut)."""
        blocks = self.redact(part, True)
        return Piece(markdown_of(blocks), blocks, self.formatter.render(blocks, plain=plain))

    def redact(self, part: Part, final: bool) -> Part:
        """``part`` with every secret replaced.

        While streaming only the last paragraph of the answer changes, so paragraphs are redacted
        once and remembered (a long answer would otherwise be scanned whole on every flush); a text
        still arriving at the end that may be the start of a secret is held back until it is whole.
        The final state is scanned whole, block by block.
        """
        if final:
            return tuple(block.scrubbed(redact) for block in part)
        fresh: dict[str, str] = {}
        out: list[Block] = []
        for i, block in enumerate(part):
            if not isinstance(block, Text):
                known = self._scrubbed.get(block)
                if known is None:
                    known = self._scrubbed[block] = block.scrubbed(redact)
                out.append(known)
                continue
            markdown = block.text
            cut = unfinished_secret_at(markdown) if i == len(part) - 1 else None
            if cut is not None:  # a token still arriving: shown once it is whole (redacted)
                markdown = markdown[:cut]
            paragraphs = markdown.split("\n\n")
            for paragraph in paragraphs:
                if paragraph not in fresh:
                    fresh[paragraph] = self._redacted.get(paragraph) or redact(paragraph)
            out.append(Text("\n\n".join(fresh[p] for p in paragraphs), block.closer))
        if len(self._redacted) > 4 * len(fresh) + 64:  # parts that stopped changing keep theirs; the rest goes
            self._redacted = fresh
        else:
            self._redacted.update(fresh)
        if len(self._scrubbed) > 256:
            self._scrubbed.clear()
        return tuple(out)
