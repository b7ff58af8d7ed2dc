"""What a ``Streamer`` knows of the messages it has put on a platform (its private bookkeeping)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.engine.messages import Button, InboundMessage

__all__ = ["Deferred", "LiveStream", "Sent", "Thread"]


@dataclass(slots=True)
class Sent:
    """One ordinary message: what it shows (None = unknown: a message we were asked to edit)."""

    message_id: str
    text: str | None
    plain: bool = False
    buttons: tuple[Button, ...] = ()
    at: float = 0.0  # when it was posted (a message edited for too long is left as it is)


@dataclass(slots=True)
class LiveStream:
    """A native stream showing the piece right after the thread's ordinary messages."""

    stream_id: str
    text: str
    started_at: float


@dataclass(slots=True)
class Thread:
    """The messages that together show one text (a part of a reply, or a standalone message)."""

    sent: list[Sent] = field(default_factory=list)
    plain: bool = False
    reply_to: str | None = None
    stream: LiveStream | None = None
    origin: InboundMessage | None = None  # a standalone reply to this inbound message
    private: bool = False


class Deferred(Exception):
    """A streaming flush was rate limited; the next flush sends the newer state."""
