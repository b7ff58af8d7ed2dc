"""The neutral data that crosses the seam: what a person sent, pressed, and what they are told back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Attachment",
    "Button",
    "ButtonPress",
    "ChoiceList",
    "ConversationStatus",
    "InboundMessage",
    "PressOutcome",
    "PressResult",
    "QueueItem",
]

PressOutcome = Literal["resolved", "expired", "refused"]


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
    """A platform message, neutral. ``conversation_key`` is opaque and surface-qualified.

    ``message_id`` is unique per surface (it de-duplicates redeliveries). ``origin`` is the surface's
    own handle for answering this message (a Discord interaction, the person a Slack stream is for),
    opaque to the core: it comes back with everything the core does for this message's reply
    (``Surface.reply``, ``capabilities_for``, ``stream``, ``typing``). It is never journaled, so a
    message replayed after a restart has none, and the surface answers it in the ordinary way.
    """

    surface: str
    conversation_key: str
    user_id: str
    text: str
    message_id: str
    display_name: str = ""
    attachments: tuple[Attachment, ...] = ()
    reply_to: str | None = None
    origin: object | None = field(default=None, compare=False, repr=False)
    #: The ``message_id`` of the person's message this one edits (its new words); ``message_id`` is
    #: then the edit's own, which recognises a redelivery of the same edit.
    edits: str | None = None
    #: With ``edits``: that message was deleted (no words; who deleted it may be unknown, as on Discord).
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """A person pressed a button the core sent (an approval, a model choice)."""

    surface: str
    conversation_key: str
    user_id: str
    token: str
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class PressResult:
    """What a press did, for the surface to answer it in its own way (a toast, an ephemeral reply).

    ``resolved``: the press was applied; ``expired``: the token is unknown, used, or from another
    conversation, and nothing changed; ``refused``: the person may not use this bot. ``text`` is
    the short sentence to show the person who pressed.
    """

    outcome: PressOutcome
    text: str


@dataclass(frozen=True, slots=True)
class ChoiceList:
    """What one of the conversation controls offers (projects, agents, sessions, modes): ``prompt`` says
    what is chosen now, ``options`` are (label, value) pairs, ``current`` the index of the one in use
    (-1: none), ``more`` the value that asks for the next page (None: the last page). Without
    options, ``prompt`` is the sentence saying why there are none."""

    prompt: str
    options: tuple[tuple[str, str], ...] = ()
    current: int = -1
    more: str | None = None


@dataclass(frozen=True, slots=True)
class QueueItem:
    """A message waiting for its turn; ``compact`` marks ``/compact``, whose success is reported;
    ``replay``, a message a restart answers again (its answer may have begun on the platform)."""

    message: InboundMessage
    compact: bool = False
    replay: bool = False


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
    #: The name the agent gives ``model`` (qwen-code: "qwen3-coder-plus" for
    #: "$runtime|openai|qwen3-coder-plus(openai)"); None when it gives none.
    model_name: str | None = None
    #: The configured project chosen for the conversation ("" none), the session's title, the mode
    #: chosen from the chat, and what the conversation has cost so far in words ("" unknown).
    project: str = ""
    title: str = ""
    mode: str = ""
    cost: str = ""
    #: What the agent said its last compaction kept ("" when it said nothing).
    compaction_summary: str = ""
    #: Relays sharing a store: the relay that owns the conversation now (None: nobody, or one relay alone).
    relay: str | None = None
