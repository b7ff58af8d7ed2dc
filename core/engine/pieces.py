"""What a platform is shown of a reply's text: redacted, then split at its limit after rendering.

Every text bound for a platform passes here, so no secret reaches a chat. Each thread of a reply
keeps its own ``Splitter``: while the reply grows, only its open tail is cut (and rendered) again.
"""

from __future__ import annotations

from collections.abc import Callable

from core.engine.splitter import Splitter, plain_text
from core.engine.streamed import Thread
from core.engine.surface import LengthUnit
from core.redact import redact, unfinished_secret_at

__all__ = ["Pieces"]

#: ``MessageTooLong`` shrinks the limit by this factor, down to ``_MIN_LIMIT``.
_SHRINK = 0.8
_MIN_LIMIT = 32


def _same(text: str) -> str:
    return text


class Pieces:
    """Cuts reply text for one conversation of one surface."""

    def __init__(self, render: Callable[[str], str], unit: LengthUnit, limit: int) -> None:
        self.render = render
        self.unit = unit
        self.limit = limit
        self._redacted: dict[str, str] = {}  # paragraph -> redacted, for the streaming flushes

    def shrink(self) -> bool:
        """The platform said a piece was too long: cut smaller from now on; False when it cannot."""
        smaller = int(self.limit * _SHRINK)
        if smaller < _MIN_LIMIT:
            return False
        self.limit = smaller
        return True

    def of(self, thread: Thread, markdown: str, *, final: bool = True) -> list[str]:
        """The pieces ``thread`` shows of ``markdown`` (as plain text where its markup was rejected).

        A part that did not change since the last call (the same text, cut the same way) costs nothing.
        """
        key = (thread.plain, self.limit)
        memo = thread.cut
        if memo is not None and memo[0] == key and memo[1] == final and memo[2] == markdown:
            return memo[3]
        text = self.redact(markdown, final)
        if thread.plain:
            text = plain_text(text)
        if thread.splitter is None or thread.split_for != key:
            thread.splitter = Splitter(_same if thread.plain else self.render, self.limit, self.unit)
            thread.split_for = key
        pieces = thread.splitter.split(text)
        thread.cut = (key, final, markdown, pieces)
        return pieces

    def redact(self, markdown: str, final: bool) -> str:
        """``markdown`` with every secret replaced.

        While streaming only the last paragraph changes, so paragraphs are redacted once and
        remembered (a long answer would otherwise be scanned whole on every flush); the final
        state is scanned whole, so nothing that spans a paragraph break slips through.
        """
        if final:
            return redact(markdown)
        cut = unfinished_secret_at(markdown)  # a token still arriving: shown once it is whole (redacted)
        if cut is not None:
            markdown = markdown[:cut]
        known = self._redacted
        blocks = markdown.split("\n\n")
        fresh = {block: known.get(block) or redact(block) for block in blocks}
        if len(known) > 4 * len(fresh) + 64:  # parts that stopped changing keep theirs; the rest goes
            self._redacted = fresh
        else:
            known.update(fresh)
        return "\n\n".join(fresh[block] for block in blocks)
