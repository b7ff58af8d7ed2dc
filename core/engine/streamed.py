"""What a ``Streamer`` knows of the messages it has put on a platform (its private bookkeeping), and
the log of a reply's messages it keeps for a restart (``Posted``, ``ReplyLog``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from core.engine.blocks import Block, Part, Rendered
from core.engine.messages import Button, InboundMessage
from core.engine.splitter import Splitter

__all__ = ["Deferred", "Layout", "LiveStream", "Piece", "Posted", "ReplyLog", "Sent", "Span", "Thread"]


@dataclass(frozen=True, slots=True)
class Posted:
    """A platform message (or a native stream) showing piece ``piece`` of part ``part`` of a reply."""

    part: int
    piece: int
    message_id: str
    kind: Literal["message", "stream"] = "message"


class ReplyLog(Protocol):
    """Where a streamer notes, as they happen, the messages its reply occupies (the store, so a
    restarted relay continues the reply in them)."""

    async def posted(self, entry: Posted) -> None:
        """``entry`` now shows its piece (replacing whatever showed it before): noted when this returns
        (the store may write it with the others noted in the same round of the loop)."""
        ...

    def removed(self, part: int, piece: int) -> None:
        """Nothing shows that piece any more (its message was deleted, or it was only a preview)."""
        ...


@dataclass(slots=True, eq=False)  # (not frozen: one is made for every cut the splitter tries)
class Piece:
    """One platform message's worth of a reply: its neutral ``text`` (what the core compares and keeps
    for a redelivery), the ``blocks`` it shows, and the surface's form of them, rendered once."""

    text: str
    blocks: Part
    shown: Rendered

    @property
    def length(self) -> int:
        """The rendered length, as the platform counts it."""
        return self.shown.length


@dataclass(frozen=True, slots=True)
class Span:
    """Where one block's wording stands in a part's laid-out text; ``code``: inside a code block the
    answer before it left open (so it is shown as the text it is there)."""

    start: int
    end: int
    block: Block
    code: bool = False


@dataclass(frozen=True, slots=True)
class Layout:
    """A part's blocks laid out as one text, as the splitter cuts it."""

    text: str
    spans: tuple[Span, ...]
    plain: bool = False


@dataclass(slots=True)
class Sent:
    """One ordinary message: what it shows (None = unknown: a message we were asked to edit)."""

    message_id: str
    text: str | None
    plain: bool = False
    buttons: tuple[Button, ...] = ()
    at: float = 0.0  # when it was posted (a message edited for too long is left as it is)
    #: Posted by a relay that was killed: kept until the reply is complete, even where it is not needed yet.
    resumed: bool = False


@dataclass(slots=True)
class LiveStream:
    """A native stream showing the piece right after the thread's ordinary messages."""

    stream_id: str
    piece: Piece
    started_at: float


@dataclass(slots=True)
class Thread:
    """The messages that together show one text (a part of a reply, or a standalone message)."""

    sent: list[Sent] = field(default_factory=list)
    plain: bool = False
    reply_to: str | None = None
    stream: LiveStream | None = None
    answering: InboundMessage | None = None  # a standalone reply to this inbound message
    private: bool = False
    part: int | None = None  # its index in a reply (None: a standalone message, not logged)
    splitter: Splitter | None = None  # cuts its text; remembers the cuts that still hold
    split_for: tuple[bool, int] = (False, 0)  # (plain, limit) the splitter cuts for
    layout: Layout | None = None  # the blocks the splitter cut last
    #: The last part cut and its pieces: ((plain, limit), final, part, pieces).
    cut: tuple[tuple[bool, int], bool, Part, list[Piece]] | None = None
    settled: list[Piece] | None = None  # the pieces it shows, exactly as they are


class Deferred(Exception):
    """A streaming flush was rate limited; the next flush sends the newer state."""
