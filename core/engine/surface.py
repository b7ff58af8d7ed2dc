"""The seam between the core and a surface, one Protocol per direction.

``Surface`` is what the core calls on a platform adapter; ``Inbound`` is what an adapter calls on
the core. A capability a platform lacks has a fallback in the core (no edits: post the final text
only; no buttons: numbered text replies such as ``approve 1``), never an ``if surface == ...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "Attachment",
    "Button",
    "ButtonPress",
    "Capabilities",
    "ConversationStatus",
    "DeliveryError",
    "DeliveryFailed",
    "Inbound",
    "InboundMessage",
    "MarkupRejected",
    "MessageTooLong",
    "NotModified",
    "RateLimited",
    "StartupError",
    "Surface",
    "measure",
]

LengthUnit = Literal["chars", "utf16"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a platform can do. Lengths are counted in ``length_unit`` AFTER rendering to markup."""

    max_message_length: int
    length_unit: LengthUnit = "chars"
    markup: str = "markdown"  # the dialect the surface renders: markdown, telegram_html, slack_mrkdwn, plain
    can_edit: bool = True
    can_delete: bool = True
    can_stream_natively: bool = False
    can_buttons: bool = True
    can_thread: bool = False
    can_typing: bool = True
    #: Seconds between edits of one streamed message; None: the relay's ``engine.edit_interval_s``.
    edit_interval_s: float | None = None


def measure(text: str, unit: LengthUnit) -> int:
    """Length as the platform counts it (Telegram counts UTF-16 code units)."""
    if unit == "utf16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


@dataclass(frozen=True, slots=True)
class Button:
    """A button under a message; pressing it hands ``token`` back to the core."""

    label: str
    token: str  # one-time token the core resolves when pressed
    style: Literal["primary", "danger", "default"] = "default"


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that came with an inbound message (images reach agents that accept them)."""

    kind: Literal["image", "file"]
    mime_type: str
    data: bytes = b""
    name: str = ""


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """A platform message, neutral. ``conversation_key`` is opaque and surface-qualified."""

    surface: str
    conversation_key: str
    user_id: str
    text: str
    message_id: str
    display_name: str = ""
    attachments: tuple[Attachment, ...] = ()
    reply_to: str | None = None


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """A person pressed a button the core sent (an approval)."""

    surface: str
    conversation_key: str
    user_id: str
    token: str
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class ConversationStatus:
    """Where a conversation stands: what a status command or the dashboard's panel shows."""

    agent: str
    model: str | None
    models: tuple[str, ...]
    cwd: str
    session_id: str | None
    context_pct: float | None
    queue_length: int
    busy: bool


class StartupError(Exception):
    """A surface refuses to start (a non-loopback dashboard without a token, a port in use...).

    The message is one plain sentence for the operator; ``acp-relay run`` prints it and exits 2.
    """


class DeliveryError(Exception):
    """A platform refused or failed a delivery. Surfaces raise these ``from`` the SDK's error."""


class RateLimited(DeliveryError):
    """The platform said 429: wait ``retry_after_s`` and send again."""

    def __init__(self, retry_after_s: float, message: str = "rate limited") -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class MessageTooLong(DeliveryError):
    """The rendered text is over the platform's limit: re-split and resend."""


class MarkupRejected(DeliveryError):
    """The platform could not parse the markup: resend as plain text."""


class NotModified(DeliveryError):
    """An edit with identical content. Not an error for the streamer."""


class DeliveryFailed(DeliveryError):
    """Anything else (network, 5xx, forbidden)."""


@runtime_checkable
class Surface(Protocol):
    """What the core calls on a surface. Text arrives as neutral Markdown (see ``render``)."""

    name: str
    capabilities: Capabilities
    #: spelling -> action, e.g. {"/new": "reset", "/compact": "compact", "!stop": "stop"}
    commands: Mapping[str, str]

    def render(self, markdown: str) -> str:
        """Neutral Markdown -> this platform's markup (the length limit applies to the result)."""
        ...

    async def send(self, conversation_key: str, text: str, *, buttons: tuple[Button, ...] = (),
                   plain: bool = False, reply_to: str | None = None) -> str:
        """Post a message; returns its platform message id."""
        ...

    async def edit(self, conversation_key: str, message_id: str, text: str, *,
                   buttons: tuple[Button, ...] = (), plain: bool = False) -> None:
        """Replace a message's text and buttons (identical content raises ``NotModified``)."""
        ...

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """Remove a message (only called when ``can_delete``)."""
        ...

    async def typing(self, conversation_key: str, active: bool) -> None:
        """Show or clear the "agent is working" indicator (only called when ``can_typing``)."""
        ...


class Inbound(Protocol):
    """What a surface calls on the core."""

    async def handle_message(self, message: InboundMessage) -> None:
        """A person wrote: de-duplicate, check access, then a command or a queued prompt."""
        ...

    async def handle_button(self, press: ButtonPress) -> None:
        """A person pressed a button (resolves an approval once; later taps answer "expired")."""
        ...
