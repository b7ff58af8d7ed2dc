"""The seam between the core and a surface, one Protocol per direction.

``Surface`` is what the core calls on a platform adapter; ``Inbound`` is what an adapter calls on
the core; ``Launched`` is a running surface as ``acp-relay run`` owns it. A capability a platform
lacks has a fallback in the core (no edits: post the final text only; no buttons: numbered text
replies such as ``approve 1``; no native streaming: send + edit; no files: the rest of a cut answer
is said to be left out), never an ``if surface == ...``.
``SurfaceDefaults`` gives an adapter those fallbacks for the optional methods.

Capabilities may differ per conversation (``capabilities_for``: Telegram streams drafts in private
chats only, and a group takes fewer messages a minute than a private chat). Every call into one chat
is paced by the core under that chat's ``rate_key`` (Telegram topics share their group's limit).

What a surface is given to show is never a string to be parsed again: the core hands its
``formatter`` typed blocks (``core.engine.blocks``), the formatter renders them ONCE into the
surface's own ``Rendered`` form and says its length as the platform counts it, the core cuts the
reply by those lengths, and ``send`` / ``reply`` / ``send_once`` / ``edit`` / ``stream`` /
``end_stream`` / ``send_file`` receive that very ``Rendered`` (plain text too: the formatter renders
it, with ``plain=True``). A surface's methods narrow it to their own type
(``core.engine.blocks.rendered_as``) and deliver it.

``origin`` is what a surface put on an ``InboundMessage`` (an interaction, the asker of a thread):
the core hands it back with every call it makes for that message's reply, and it is None for a
message replayed after a restart (the surface then answers in the ordinary way).

Migrating a surface written against the string seam: ``render(markdown) -> str`` becomes a
``formatter`` whose ``render(blocks, plain=...)`` returns an object with ``length`` (the text and
whatever the platform call needs); ``send(key, text, plain=...)`` becomes ``send(key, message)``,
and likewise for the other methods (``plain`` is now inside ``message``); ``capabilities_for``,
``stream`` and ``typing`` take an ``origin`` keyword (ignore it where the platform needs none).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from core.engine.blocks import Formatter, Rendered
from core.engine.messages import (
    Attachment,
    Button,
    ButtonPress,
    ConversationStatus,
    InboundMessage,
    PressResult,
)
from core.errors import RelayError

__all__ = [
    "AnswerUnreadable",
    "Attachment",
    "Button",
    "ButtonPress",
    "Capabilities",
    "ConversationStatus",
    "DeliveryError",
    "DeliveryFailed",
    "DeliveryRefused",
    "Formatter",
    "Inbound",
    "InboundMessage",
    "Launched",
    "LengthUnit",
    "MarkupRejected",
    "MessageTooLong",
    "NotModified",
    "PressResult",
    "RateLimit",
    "RateLimited",
    "Rendered",
    "StartupError",
    "Surface",
    "SurfaceDefaults",
    "measure",
]

LengthUnit = Literal["chars", "utf16"]


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``calls`` platform calls per ``per_s`` seconds into one chat (its ``rate_key``), of
    which up to ``burst`` may go at once after a quiet moment (Discord: 5 per 5 s, all at once)."""

    calls: int
    per_s: float
    burst: int = 1


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a platform can do. Lengths are what the surface's formatter reports (``Rendered.length``):
    counted in ``length_unit``, after rendering."""

    max_message_length: int
    length_unit: LengthUnit = "chars"
    can_edit: bool = True
    can_delete: bool = True
    #: ``Surface.stream`` / ``end_stream`` work here (a Telegram draft, a Slack stream).
    can_stream_natively: bool = False
    can_buttons: bool = True
    #: A streamed answer carries a Stop button while it is written (the turn ends as the stop command
    #: ends it); off where the surface has a Stop of its own beside the answer (the dashboard's).
    stop_button: bool = False
    can_typing: bool = True
    #: Seconds between edits of one streamed message; None: the relay's ``engine.edit_interval_s``.
    edit_interval_s: float | None = None
    #: The pace of one chat, shared by every stream, notice and approval in it; None: unpaced.
    rate_limit: RateLimit | None = None
    #: The platform drops a typing indicator after a few seconds: re-send it this often while a turn runs.
    typing_refresh_s: float | None = None
    #: A streamed message (or native stream) older than this is left as it is, and the reply goes on
    #: in a new message (Discord throttles edits of old messages; a Slack stream expires).
    rollover_after_s: float | None = None
    #: The largest file ``send_file`` posts here, in bytes (None: the core's default cap); a larger
    #: file the agent shares is not sent, and a sentence says so.
    max_file_bytes: int | None = None


def measure(text: str, unit: LengthUnit) -> int:
    """Length as the platform counts it (Telegram counts UTF-16 code units)."""
    if unit == "utf16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


class StartupError(RelayError):
    """A surface cannot run with this configuration: a non-loopback dashboard without a token, a
    port in use, an invalid bot token, an intent the platform refuses (at start, or when the
    platform says so later). The message is one plain sentence for the operator, naming the config
    key; ``acp-relay run`` prints it and exits 2.
    """

    code = "startup"
    worded = True


class DeliveryError(RelayError):
    """A platform refused or failed a delivery. Surfaces raise these ``from`` the SDK's error."""

    code = "delivery"


class RateLimited(DeliveryError):
    """The platform said 429: wait ``retry_after_s`` and send again."""

    code = "delivery.rate_limited"

    def __init__(self, retry_after_s: float, message: str = "rate limited") -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class MessageTooLong(DeliveryError):
    """The rendered text is over the platform's limit: re-split and resend."""

    code = "delivery.too_long"


class MarkupRejected(DeliveryError):
    """The platform could not parse the markup: resend as plain text."""

    code = "delivery.markup_rejected"


class NotModified(DeliveryError):
    """An edit with identical content. Not an error for the streamer."""

    code = "delivery.not_modified"


class DeliveryFailed(DeliveryError):
    """Anything else that may pass (network, 5xx): retried, and kept in the ledger if it never lands."""

    code = "delivery.failed"


class AnswerUnreadable(DeliveryError):
    """The platform took the call, but its answer could not be read, so the message it made has no id
    we know (a send whose answer the SDK cannot parse; ``ok`` without the message's id). It may well
    be shown: it is never sent again as it is, and never reported as undelivered. A surface that can
    still find the id in the answer returns it instead of raising."""

    code = "delivery.unreadable"


class DeliveryRefused(DeliveryError):
    """The chat will never take this (the bot was removed, 403, the channel is gone): not retried."""

    code = "delivery.refused"


@runtime_checkable
class Surface(Protocol):
    """What the core calls on a surface. What it shows arrives rendered by its ``formatter``."""

    name: str
    capabilities: Capabilities
    #: spelling -> action, e.g. {"/new": "reset", "/compact": "compact", "!stop": "stop"}
    commands: Mapping[str, str]
    #: The names this bot answers to in ``/cmd@name`` (Telegram); a command for another name is
    #: ignored. Empty: the platform has no such addressing, and a suffix is ignored.
    bot_usernames: Collection[str]

    @property
    def formatter(self) -> Formatter:
        """Renders the core's blocks for this platform, once per message, with the length it counts."""
        ...

    def capabilities_for(self, conversation_key: str, origin: object | None = None) -> Capabilities:
        """The capabilities in one conversation (a private chat may stream where a group cannot), for
        a reply to the message ``origin`` came with (None: a notice, or a message replayed after a
        restart)."""
        ...

    def rate_key(self, conversation_key: str) -> str:
        """The chat whose pace ``conversation_key`` shares (a forum topic shares its group's)."""
        ...

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        """Post a message; returns its platform message id."""
        ...

    async def agent_commands(self, conversation_key: str, commands: Sequence[tuple[str, str]]) -> None:
        """The agent of ``conversation_key`` offers these commands (name, description): a surface with a
        command menu per chat shows them there (Telegram); typing one sends it to the agent as a prompt."""
        ...

    async def reply(self, message: InboundMessage, answer: Rendered, *, buttons: tuple[Button, ...] = (),
                    private: bool = False) -> str:
        """Answer ``message`` itself (a command, a refusal): through its ``origin`` where it came with
        one (an interaction), only to its sender where ``private`` and the platform can. Returns the
        message id."""
        ...

    async def send_once(self, conversation_key: str, message: Rendered, *, key: str,
                        buttons: tuple[Button, ...] = (), reply_to: str | None = None) -> str:
        """``send`` a piece of an answer, posted at most once per ``key`` where the platform can do that
        (a relay killed before it heard back sends it again after the restart: Discord's nonce)."""
        ...

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        """Replace a message's content and buttons (identical content raises ``NotModified``)."""
        ...

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """Remove a message (only called when ``can_delete``)."""
        ...

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        """Show or clear the "agent is working" indicator while the message ``origin`` came with is
        answered (only called when ``can_typing``)."""
        ...

    async def stream(self, conversation_key: str, stream_id: str | None, message: Rendered, *,
                     reply_to: str | None = None, origin: object | None = None) -> str:
        """Show ``message`` (the WHOLE message so far, within the limit) as a native stream;
        ``stream_id`` None starts one, for the reply to the message ``origin`` came with. Returns the
        stream's id. Where the platform only appends, the surface computes what to append (only
        called when ``can_stream_natively``)."""
        ...

    async def end_stream(self, conversation_key: str, stream_id: str, message: Rendered) -> str | None:
        """End a native stream whose final content is ``message``. Returns the id of the ordinary
        message that now shows it (a stopped Slack stream), or None when the stream was only a preview
        (a Telegram draft): the core then posts it as an ordinary message."""
        ...

    async def send_file(self, conversation_key: str, name: str, data: bytes, *, caption: Rendered,
                        fallback: Rendered, reply_to: str | None = None) -> str:
        """Post ``data`` as a file called ``name`` with ``caption`` (the rest of an answer too long to
        show); returns the message id. Where the platform takes no files, post ``fallback`` instead."""
        ...


class SurfaceDefaults:
    """The core's fallbacks for a surface's optional methods; adapters inherit and override."""

    name: str
    capabilities: Capabilities
    bot_usernames: Collection[str] = frozenset()

    def capabilities_for(self, conversation_key: str, origin: object | None = None) -> Capabilities:
        """The same capabilities everywhere."""
        return self.capabilities

    def rate_key(self, conversation_key: str) -> str:
        """Each conversation is its own chat."""
        return conversation_key

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        """Every surface implements this."""
        raise NotImplementedError

    async def reply(self, message: InboundMessage, answer: Rendered, *, buttons: tuple[Button, ...] = (),
                    private: bool = False) -> str:
        """An ordinary message in the conversation, replying to ``message``."""
        return await self.send(message.conversation_key, answer, buttons=buttons, reply_to=message.message_id)

    async def send_once(self, conversation_key: str, message: Rendered, *, key: str,
                        buttons: tuple[Button, ...] = (), reply_to: str | None = None) -> str:
        """The platform has no idempotency key: an ordinary ``send``."""
        return await self.send(conversation_key, message, buttons=buttons, reply_to=reply_to)

    async def stream(self, conversation_key: str, stream_id: str | None, message: Rendered, *,
                     reply_to: str | None = None, origin: object | None = None) -> str:
        """No native streaming: the core falls back to send + edit."""
        raise DeliveryFailed(f"{self.name} has no native streaming")

    async def end_stream(self, conversation_key: str, stream_id: str, message: Rendered) -> str | None:
        """Nothing to end; the core posts the message itself."""
        return None

    async def send_file(self, conversation_key: str, name: str, data: bytes, *, caption: Rendered,
                        fallback: Rendered, reply_to: str | None = None) -> str:
        """No files here: ``fallback`` says what was left out."""
        return await self.send(conversation_key, fallback, reply_to=reply_to)

    async def agent_commands(self, conversation_key: str, commands: Sequence[tuple[str, str]]) -> None:
        """No command menu of its own: the help command lists the agent's commands."""


class Inbound(Protocol):
    """What a surface calls on the core."""

    async def handle_message(self, message: InboundMessage) -> None:
        """A person wrote: de-duplicate, check access, then a command or a queued prompt.

        Before the engine has started (replayed what a killed relay left) and once it is closing, the
        message is only journaled: it is answered after the (next) start, never twice.
        """
        ...

    def accept(self, message: InboundMessage) -> Callable[[], Awaitable[None]] | None:
        """``handle_message`` in two halves, for a surface that confirms a message to its platform
        only once it is stored (Telegram's update offset): when this returns, ``message`` is
        journaled; the surface then awaits the returned rest (if any) in order per conversation."""
        ...

    def permits(self, surface: str, user_id: str) -> bool:
        """May ``user_id`` talk to the agent on ``surface``? A surface asks before it downloads what a
        message carries: a stranger's attachments cost nothing (the engine refuses the message itself)."""
        ...

    def reject(self, surface: str, message_id: str, reason: str) -> None:
        """An update the surface could not read even after a few tries (a poison update), or a message
        it journaled and cannot serve after all: stored as rejected (completed, never replayed), so the
        surface confirms it to its platform and goes on. ``message_id`` is the platform's id; ``reason``
        says what was wrong, never with the message's text."""
        ...

    async def handle_button(self, press: ButtonPress) -> PressResult:
        """A person pressed a button: applied once; the surface answers the press with the result."""
        ...


class Launched(Protocol):
    """A running surface, as ``surfaces.<name>.launch(engine, config)`` returns it."""

    async def stop_receiving(self) -> None:
        """Take no more updates from the platform (the first step of a shutdown)."""
        ...

    async def fatal(self) -> StartupError:
        """Returns only when the surface can never receive again with this config (an invalid
        token, a refused intent); ``acp-relay run`` then stops and exits 2 with its sentence."""
        ...

    async def close(self) -> None:
        """Stop serving (called after the engine has closed, so final answers could still be sent)."""
        ...
