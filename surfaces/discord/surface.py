"""Discord as a ``Surface``: channel messages by send + edit, buttons as components, answers to slash
commands through their interactions.

Discord has no streaming API, so the core posts and then edits (about once a second, paced per
channel: Discord allows about five messages per five seconds in one channel). A message edited for
longer than ``rollover_after_s`` is left as it is and the answer continues in a new message
(Discord throttles edits of messages older than an hour, error 30046). Messages are at most 2,000
characters (as ``DiscordFormatter`` renders them); the core splits longer answers without breaking
code fences. The rest of an answer too long to show is a message with the file attached.

A slash command comes with its deferred interaction as the message's ``origin``: ``reply`` answers
through it while its token is fresh. A message replayed after a restart has none and is answered in
the channel.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import discord

from core.surface_api import (
    AnswerUnreadable,
    Button,
    Capabilities,
    DeliveryError,
    DeliveryFailed,
    InboundMessage,
    MessageTooLong,
    RateLimit,
    Rendered,
    SurfaceDefaults,
    rendered_as,
)
from surfaces.discord.answers import Answer, listen, unreadable
from surfaces.discord.errors import PLATFORM_ERRORS, delivery_error
from surfaces.discord.interactions import NO_PINGS, Interactions, LiveInteraction
from surfaces.discord.keys import SURFACE_NAME, channel_of
from surfaces.discord.render import DiscordFormatter, DiscordMessage
from surfaces.discord.views import build_view

__all__ = ["CAPABILITIES", "COMMANDS", "MAX_MESSAGE_LENGTH", "DiscordSurface"]

MAX_MESSAGE_LENGTH = 2000
#: Discord throttles edits of messages older than an hour; ten minutes of margin.
ROLLOVER_AFTER_S = 50 * 60.0
CAPABILITIES = Capabilities(
    max_message_length=MAX_MESSAGE_LENGTH, length_unit="chars", can_edit=True,
    can_delete=True, can_buttons=True, stop_button=True, can_typing=True, edit_interval_s=None,
    rate_limit=RateLimit(5, 5.0, burst=5),  # Discord's per-channel bucket: 5 per 5 s
    typing_refresh_s=8.0,  # Discord shows "is typing…" for about ten seconds
    rollover_after_s=ROLLOVER_AFTER_S, max_file_bytes=10 * 1024 * 1024)
#: Slash commands arrive as their ``/`` spelling; ``!`` is the text alias typed in a message.
COMMANDS: Mapping[str, str] = MappingProxyType({
    "/new": "reset", "!new": "reset", "/compact": "compact", "!compact": "compact", "/stop": "stop",
    "!stop": "stop", "/status": "status", "!status": "status", "/model": "model", "!model": "model",
    "/help": "help", "!help": "help", "/sessions": "sessions", "!sessions": "sessions", "/project": "project",
    "!project": "project", "/agent": "agent", "!agent": "agent", "/mode": "mode", "!mode": "mode",
    "!steer": "steer",
})


@contextmanager
def translated(what: str) -> Iterator[Answer]:
    """discord.py's failures inside the block as the core's delivery errors; an exception after Discord
    answered 2xx is ``AnswerUnreadable`` (the call was carried out). Yields that answer."""
    with listen() as answer:
        try:
            yield answer
        except PLATFORM_ERRORS as exc:
            raise delivery_error(exc) from exc
        except Exception as exc:
            if not answer.returned:
                raise  # not Discord's doing (a bug): it goes on as it is
            raise unreadable(what, exc) from exc


def _found(answer: Answer) -> str:
    """The id of a message whose answer discord.py could not read, if the answer still has it."""
    found = answer.message_id()
    if found is None:
        raise unreadable("a message", ValueError("no id"))
    return found


def _message_id(message_id: str) -> int:
    if not message_id.isdigit():
        raise DeliveryFailed(f"not a Discord message id: {message_id!r}")
    return int(message_id)


class DiscordSurface(SurfaceDefaults):
    """The ``Surface`` the engine calls; ``interactions`` opens the slash commands' interactions and
    knows the messages made through them (edited through them while their token is fresh)."""

    name = SURFACE_NAME
    commands = COMMANDS
    formatter = DiscordFormatter()

    def __init__(self, client: discord.Client, capabilities: Capabilities = CAPABILITIES) -> None:
        self.client = client
        self.capabilities = capabilities
        self.interactions = Interactions()

    def _content(self, rendered: Rendered) -> str:
        message = rendered_as(rendered, DiscordMessage)
        if message.length > self.capabilities.max_message_length:
            raise MessageTooLong(f"{message.length} characters; Discord takes {self.capabilities.max_message_length}")
        return message.content

    def _channel(self, key: str) -> discord.PartialMessageable:
        return self.client.get_partial_messageable(channel_of(key))

    def _reference(self, channel_id: int, reply_to: str | None) -> discord.MessageReference | None:
        """A reply to ``reply_to`` where it can be one: not to a thread's starter message (it lives in
        the parent channel). A message deleted meanwhile, or an id that is no message here (a slash
        command's interaction), is simply not quoted."""
        if not reply_to or not reply_to.isdigit() or int(reply_to) == channel_id:
            return None
        return discord.MessageReference(message_id=int(reply_to), channel_id=channel_id, fail_if_not_exists=False)

    async def send_once(self, conversation_key: str, message: Rendered, *, key: str,
                        buttons: tuple[Button, ...] = (), reply_to: str | None = None) -> str:
        """``send`` with a nonce made from ``key``: discord.py asks Discord to enforce it, so a piece sent
        again after a crash returns the message already posted instead of a second copy."""
        nonce = hashlib.blake2b(key.encode(), digest_size=12).hexdigest()  # Discord takes 25 characters
        content = self._content(message)
        message_id, shown = await self._post(conversation_key, content, buttons, reply_to, nonce)
        if shown is not None and shown != content:  # the copy a killed relay posted: it shows what it had then
            await self.edit(conversation_key, message_id, message, buttons=buttons)
        return message_id

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        """Post a message (with buttons, as a reply where it can be); returns its id."""
        message_id, _ = await self._post(conversation_key, self._content(message), buttons, reply_to)
        return message_id

    async def _post(self, conversation_key: str, content: str, buttons: tuple[Button, ...], reply_to: str | None,
                    nonce: str | None = None) -> tuple[str, str | None]:
        """The posted message's id, and the text Discord says it shows (None: its answer was unreadable)."""
        channel = self._channel(conversation_key)
        kwargs: dict[str, Any] = {"content": content, "allowed_mentions": NO_PINGS}
        if nonce is not None:
            kwargs["nonce"] = nonce
        if buttons:
            kwargs["view"] = build_view(buttons)
        reference = self._reference(channel.id, reply_to)
        if reference is not None:
            kwargs["reference"] = reference
        try:
            with translated("a message") as answer:
                message = await channel.send(**kwargs)
        except AnswerUnreadable:
            return _found(answer), None
        return str(message.id), message.content

    async def send_file(self, conversation_key: str, name: str, data: bytes, *, caption: Rendered,
                        fallback: Rendered, reply_to: str | None = None) -> str:
        """A message with the file attached (the rest of an answer too long to show)."""
        channel = self._channel(conversation_key)
        kwargs: dict[str, Any] = {"content": self._content(caption), "allowed_mentions": NO_PINGS,
                                  "file": discord.File(io.BytesIO(data), filename=name)}
        reference = self._reference(channel.id, reply_to)
        if reference is not None:
            kwargs["reference"] = reference
        try:
            with translated("a file") as answer:
                message = await channel.send(**kwargs)
        except AnswerUnreadable:
            return _found(answer)
        return str(message.id)

    async def reply(self, message: InboundMessage, answer: Rendered, *, buttons: tuple[Button, ...] = (),
                    private: bool = False) -> str:
        """Answer through the message's interaction (its ``origin``; ephemeral where ``private``) while it
        is fresh, else reply in the channel (a channel message cannot be private: an ordinary reply)."""
        live = message.origin if isinstance(message.origin, LiveInteraction) else None
        if live is None or not self.interactions.fresh(live):
            return await self.send(message.conversation_key, answer, buttons=buttons, reply_to=message.message_id)
        content = self._content(answer)
        try:
            with translated("an interaction's answer") as heard:
                message_id = await live.answer(content, build_view(buttons) if buttons else None, private)
        except AnswerUnreadable:
            message_id = _found(heard)
        self.interactions.made(message_id, live)
        return message_id

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        """Replace a message's text and buttons (no buttons: the components are removed)."""
        content = self._content(message)
        view = build_view(buttons) if buttons else None
        maker = self.interactions.maker(message_id)
        with translated("an edit"):
            if maker is not None:
                await maker.edit(message_id, content, view)
            else:
                target = self._channel(conversation_key).get_partial_message(_message_id(message_id))
                await target.edit(content=content, view=view, allowed_mentions=NO_PINGS)

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """Remove a message (an answer that got shorter); one already gone is fine."""
        target = self._channel(conversation_key).get_partial_message(_message_id(message_id))
        try:
            with translated("a deletion"):
                await target.delete()
        except DeliveryError as exc:
            if not isinstance(exc.__cause__, discord.NotFound):
                raise  # (one already gone is fine)

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        """Show "is typing…" (about ten seconds; the core refreshes it). Discord has no way to clear it
        early: the next message does."""
        if not active:
            return
        with translated("the typing indicator"):
            await self._channel(conversation_key).typing()
