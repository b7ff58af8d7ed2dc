"""Discord messages -> the core's inbound messages: which messages are a conversation, and which.

- A DM is one conversation (``discord:<dm channel>``).
- In an allowed channel, a message that mentions the bot opens a thread named after the prompt, and
  the conversation lives in that thread; later messages in the thread continue it without a mention.
  A command there (``@bot !status``), and anything from a person not on the allow-list, stays in the
  channel itself: no thread is opened for it (the core refuses that person once, naming their id).
- Channels that are not allowed, and threads under them, get nothing at all.

Messages of one channel are handed over in the order Discord sent them, though discord.py runs every
event in its own task (``Host.ordered``, per channel), and each channel remembers the last message
handed over, so a restarted relay can fetch what it missed (``catchup``).

Discord sends a message once. One the store cannot keep (its disk is full, the database is away) is
held and tried again, with a growing delay, until the store takes it: its person is told once, and
the channel's later messages wait behind it, in order. A relay stopped meanwhile leaves it to the next
start's catch-up (the channel's place never moved past it).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Collection
from typing import Literal

import discord

from core.surface_api import (
    HELD_RETRY_S,
    Attachment,
    HeldMessages,
    Host,
    InboundMessage,
    StoreError,
    download_as,
    forwarded_text,
    route,
)
from surfaces.discord import wording
from surfaces.discord.channels import Kind, KnownChannels
from surfaces.discord.errors import PLATFORM_ERRORS, THREAD_EXISTS
from surfaces.discord.keys import SURFACE_NAME, conversation_key
from surfaces.discord.surface import COMMANDS

__all__ = ["MAX_IMAGE_BYTES", "Router"]

log = logging.getLogger("acp_relay.discord.inbound")

#: Images larger than this are not downloaded (Discord's own upload limit for most servers).
MAX_IMAGE_BYTES = 10 * 1024 * 1024
_THREAD_NAME_MAX = 100
_OTHER_MENTION = re.compile(r"<(?:@[!&]?|#)\d+>")
_PEOPLE = (discord.MessageType.default, discord.MessageType.reply)
_THREAD_ARCHIVE_MIN: Literal[10080] = 10080  # a week, so a quiet conversation is not archived overnight


def thread_name(text: str) -> str:
    """A thread's name from its first prompt: the first line, mentions removed, at most 100 characters."""
    lines = [line for line in _OTHER_MENTION.sub("", text).splitlines() if line.strip()]
    words = " ".join(lines[0].split()) if lines else ""
    if not words:
        return wording.THREAD_FALLBACK_NAME
    return words if len(words) <= _THREAD_NAME_MAX else words[:_THREAD_NAME_MAX - 1] + "…"


def _forwarded(message: discord.Message) -> list[discord.MessageSnapshot]:
    """The messages ``message`` forwards (a forward's own content is empty: what it says is in these)."""
    reference = message.reference
    if reference is None or reference.type != discord.MessageReferenceType.forward:
        return []
    return list(message.message_snapshots)


def with_forwarded(message: discord.Message, text: str) -> str:
    """``text``, then the words of the messages it forwards, each said to be forwarded."""
    forwarded = [forwarded_text(s.content.strip()) for s in _forwarded(message) if s.content.strip()]
    return "\n\n".join(filter(None, (text, *forwarded)))


def _nothing_to_read(message: discord.Message) -> tuple[Attachment, ...]:
    """The message's stickers and its poll (a forwarded message's stickers too): nothing the agent could
    read, named as not sent (never fetched: a media type that is never text, and no data), so the person
    is not answered as if they wrote nothing."""
    stickers = len(message.stickers) + sum(len(s.stickers) for s in _forwarded(message))
    named = ["sticker"] * stickers + (["poll"] if message.poll is not None else [])
    return tuple(Attachment("file", f"application/vnd.discord.{what}", b"", what) for what in named)


def _in_guild(message: discord.Message) -> bool:
    """The message was written in a server, loaded or not: one whose GUILD_CREATE has not come yet
    leaves ``message.guild`` None, but its channel still carries the server's id (never a DM)."""
    return message.guild is not None or getattr(message.channel, "guild_id", None) is not None


class Router:
    """Decides where each message belongs and hands it to the core."""

    def __init__(self, host: Host, client: discord.Client, known: KnownChannels, *,
                 allowed_channel_ids: Collection[int],
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.host = host
        self.client = client
        self.known = known
        self.allowed_channels = frozenset(allowed_channel_ids)
        self.receiving = True
        self._live = asyncio.Event()  # closed until the first catch-up has handed over what was missed
        self._sleep = sleep
        self._holding: set[asyncio.Task[object]] = set()  # waiting to try a message the store refused again
        self._held = HeldMessages(host, "Discord")  # only to tell (a message is offered again in its line)

    # -- what is ours ----------------------------------------------------------------------

    def is_person(self, message: discord.Message) -> bool:
        """A person's message (not a bot's, not a system message such as "thread created"; not one
        that discord.py read without an author)."""
        author = getattr(message, "author", None)
        return author is not None and not author.bot and message.type in _PEOPLE

    def mentions_me(self, message: discord.Message) -> bool:
        """The message mentions the bot itself (not @everyone, not a role)."""
        me = self.client.user
        return me is not None and me.id in message.raw_mentions

    def without_mention(self, text: str) -> str:
        """``text`` with the bot's own mentions removed."""
        me = self.client.user
        return re.sub(rf"<@!?{me.id}>", "", text).strip() if me is not None else text.strip()

    def where(self, channel: object, channel_id: int, *, in_guild: bool) -> tuple[Kind, int | None] | None:
        """The kind of place ``channel_id`` is for the relay, with a thread's parent; None: not ours."""
        seen = self.known.get(channel_id)
        if not in_guild and (seen is None or seen.kind == "dm"):
            return "dm", None  # (a known thread fetched without its guild still counts as that thread)
        parent = getattr(channel, "parent_id", None)
        if parent is None and seen is not None:
            parent = seen.parent
        if channel_id in self.allowed_channels:
            return "channel", None
        if parent is not None and parent in self.allowed_channels:
            return "thread", parent
        return None

    def interaction_key(self, interaction: discord.Interaction) -> str | None:
        """The conversation a slash command belongs to, or None in a channel the relay does not serve."""
        channel_id = interaction.channel_id
        if channel_id is None:
            return None
        place = self.where(interaction.channel, channel_id, in_guild=interaction.guild_id is not None)
        return None if place is None else conversation_key(channel_id)

    # -- messages --------------------------------------------------------------------------

    def unreadable(self, event: str, ident: str, why: str) -> None:
        """An event (a gateway one, or a message fetched by the catch-up) discord.py could not parse:
        logged once, never its text; a message is stored as rejected (it is never asked for again)."""
        log.warning("skipped Discord %s %s: it could not be read (%s)", event, ident or "without an id", why)
        if event == "MESSAGE_CREATE" and ident:
            self.host.reject(ident, why)

    def hold(self) -> None:
        """A new gateway session began: live messages wait until ``release`` (the catch-up first hands
        over what was written while the relay was away, so nothing is answered out of order)."""
        self._live.clear()

    def release(self) -> None:
        """Live messages go on (the catch-up is done, or failed)."""
        self._live.set()

    def stop(self) -> None:
        """Hand nothing more over: messages still waiting go, and so do those held for the store (each
        is fetched again by the next start's catch-up)."""
        self.receiving = False
        self.release()
        for task in self._holding:
            task.cancel()

    async def on_message(self, message: discord.Message, *, live: bool = True) -> None:
        """A gateway MESSAGE_CREATE (``live``), or a message the catch-up fetched after a restart."""
        if not self.receiving or not self.is_person(message):
            return
        if live:
            await self._live.wait()
            if not self.receiving:
                return
        async with self.host.ordered(f"channel:{message.channel.id}"):  # in event order, per channel
            await self._route_held(message)

    async def on_edit(self, message: discord.Message) -> None:
        """A gateway MESSAGE_UPDATE of a person's message, for the bot as it reads now: an edit of its words
        reaches the core (which answers it as an edit, or as the message itself, late, when it never took
        it in). One without an edit time is a link preview or a pin. A message that now mentions the bot
        where nothing was the bot's yet (a channel message that opened no thread, a thread the bot is
        not in) is taken as a new one is: the mention was forgotten, then edited in."""
        if not self.receiving or message.edited_at is None or not self.is_person(message):
            return
        await self._live.wait()
        place = self.where(message.channel, message.channel.id, in_guild=_in_guild(message))
        if place is None or not self.receiving:
            return
        kind, channel_id = place[0], message.channel.id
        if self.known.get(message.id if kind == "channel" else channel_id) is None and kind != "dm":
            if self.mentions_me(message):
                async with self.host.ordered(f"channel:{channel_id}"):
                    await self._route_held(message)
            return
        # A mention in a channel opened a thread of the same id, and is answered in it.
        where = message.id if kind == "channel" else channel_id
        text = message.content.strip() if kind == "dm" else self.without_mention(message.content)
        if not text:
            return  # every word taken out: nothing to read (its files were sent with it)
        edit = InboundMessage(SURFACE_NAME, conversation_key(where), str(message.author.id), text,
                              f"{message.id}:edit:{message.edited_at.isoformat()}",
                              display_name=message.author.display_name, edits=str(message.id))
        async with self.host.ordered(f"channel:{where}"):
            await self._change_held(edit, "an edit")

    async def on_delete(self, message_id: int, channel_id: int, guild_id: int | None) -> None:
        """A gateway MESSAGE_DELETE: the core takes a message it took in out of the line, or says it was read
        already (nothing else is known of it: not who wrote it, nor who deleted it). A deletion in a place
        the relay does not serve is not looked up."""
        channel = self.client.get_channel(channel_id)
        if not self.receiving or self.where(channel, channel_id, in_guild=guild_id is not None) is None:
            return
        await self._live.wait()
        thread = self.known.get(message_id) is not None  # a mention that opened a thread: answered in it
        where = message_id if thread else channel_id
        deletion = InboundMessage(SURFACE_NAME, conversation_key(where), "", "", f"{message_id}:deleted",
                                  edits=str(message_id), deleted=True)
        async with self.host.ordered(f"channel:{where}"):
            await self._change_held(deletion, "the deletion")

    async def _route_held(self, message: discord.Message) -> None:
        """``_route``, tried again while the store refuses what it must keep (see the module's doc)."""
        delay, longest = HELD_RETRY_S
        refused = 0
        while True:
            try:
                await self._route(message)
            except StoreError as exc:
                refused += 1
                if refused == 1:
                    log.warning("could not save Discord message %s; trying again until the store takes it: %s",
                                message.id, exc)
                else:
                    log.debug("the store refused Discord message %s again (%d times)", message.id, refused)
            else:
                if refused:
                    self._held.saved(str(message.id))
                    log.info("saved Discord message %s after the store refused it %d times", message.id, refused)
                return
            await self._hold(delay)
            if not self.receiving:
                return
            delay = min(delay * 2, longest)

    async def _change_held(self, change: InboundMessage, what: str) -> None:
        """Hand a person's edit or deletion (``what``) to the core, tried again while the store refuses it:
        Discord sends no event twice. The channel's later messages wait behind it (the caller's line), as
        behind a message held; said once in the log."""
        delay, longest = HELD_RETRY_S
        refused = 0
        while self.receiving:
            try:
                await self.host.submit(change)
            except StoreError as exc:
                refused += 1
                if refused == 1:
                    log.warning("could not take %s of Discord message %s; trying again until the store takes it: %s",
                                what, change.edits, exc)
            else:
                if refused:
                    log.info("took %s of Discord message %s after the store refused it %d times", what,
                             change.edits, refused)
                return
            await self._hold(delay)
            delay = min(delay * 2, longest)

    async def _hold(self, delay: float) -> None:
        """Wait ``delay`` (``stop`` ends the wait)."""
        task = asyncio.current_task()
        assert task is not None
        self._holding.add(task)
        try:
            await self._sleep(delay)
        finally:
            self._holding.discard(task)

    async def _route(self, message: discord.Message) -> None:
        channel_id = message.channel.id
        place = self.where(message.channel, channel_id, in_guild=_in_guild(message))
        if place is None:
            return  # a channel that is not allowed: nothing at all
        kind, parent = place
        if kind == "dm":
            await self._hand(message, with_forwarded(message, message.content.strip()), channel_id)
            self.known.note(channel_id, message.id, "dm")
            return
        mentioned = self.mentions_me(message)
        text = self.without_mention(message.content)
        if kind == "thread":
            if self.known.get(channel_id) is None and not mentioned:
                return  # someone else's thread that never addressed the bot
            await self._hand(message, with_forwarded(message, text), channel_id)
            self.known.note(channel_id, message.id, "thread", parent)
            return
        if not mentioned:
            self.known.note(channel_id, message.id, "channel")
            return
        if not text and not message.attachments and not _nothing_to_read(message):
            text = "!help"  # a bare mention asks what the bot can do
        if not self.host.permits(str(message.author.id)) or route(text, COMMANDS) is not None:
            await self._hand(message, text, channel_id)  # refused once, or a command: no thread for it
            self.known.note(channel_id, message.id, "channel")
            return
        await self._start_thread(message, text, channel_id)

    async def _start_thread(self, message: discord.Message, text: str, channel_id: int) -> None:
        """A mention that opens a thread, in an order a kill at any point cannot lose: the thread (whose
        id is the mention's own, Discord's rule) is known first; then it is opened, or found when an
        earlier run opened it; then the mention is journaled (the core answers it in the thread, which
        exists by then); only then does the channel's position move past the mention, so a restart's
        catch-up finds it again until it is journaled."""
        thread_id = message.id
        try:
            if self.known.get(channel_id) is None:  # the channel's first message: a catch-up must read from here
                self.known.note(channel_id, message.id - 1, "channel")
            self.known.note(thread_id, message.id, "thread", channel_id)
        except StoreError as exc:  # offered again in place: its person hears now why it waits, not at the hand-over
            self._tell_held(InboundMessage(SURFACE_NAME, conversation_key(thread_id), str(message.author.id), text,
                                           str(message.id)), message, exc)
            raise
        async with self.host.ordered(f"channel:{thread_id}"):  # nothing written in the new thread goes first
            thread = await self._open_thread(message, text)
            if thread is None:  # the person was told why; the mention is never answered
                self.host.reject(str(message.id), "no thread could be opened for it")
            else:
                await self._hand(message, text, thread_id)
        self.known.note(channel_id, message.id, "channel")

    async def _open_thread(self, message: discord.Message, text: str) -> discord.Thread | None:
        try:
            return await message.create_thread(name=thread_name(text), auto_archive_duration=_THREAD_ARCHIVE_MIN)
        except discord.HTTPException as exc:
            if exc.code == THREAD_EXISTS:  # an earlier run opened it and was stopped before it went on
                return await self._existing_thread(message.id)
            log.warning("could not open a thread in channel %s: %s", message.channel.id, exc)
        except (*PLATFORM_ERRORS, ValueError) as exc:  # ValueError: the guild is not known yet
            log.warning("could not open a thread in channel %s: %s", message.channel.id, exc)
        self.host.notify(conversation_key(message.channel.id), wording.NO_THREAD, reply_to=str(message.id))
        return None

    async def _existing_thread(self, thread_id: int) -> discord.Thread | None:
        found = self.client.get_channel(thread_id)
        if isinstance(found, discord.Thread):
            return found
        try:
            fetched = await self.client.fetch_channel(thread_id)
        except PLATFORM_ERRORS as exc:
            log.warning("the thread %s exists but could not be read: %s", thread_id, exc)
            return None
        return fetched if isinstance(fetched, discord.Thread) else None

    async def _hand(self, message: discord.Message, text: str, conversation_channel: int) -> None:
        """Journal the message (``Host.submit``); the core handles it after the conversation's earlier ones."""
        reference = message.reference
        replies = reference is not None and reference.type != discord.MessageReferenceType.forward
        reply_to = reference.message_id if reference is not None and replies else None
        user_id = str(message.author.id)
        # A stranger is refused by the core; what they attached is never downloaded.
        attached = await self._attachments(message) if self.host.permits(user_id) else ()
        inbound = InboundMessage(SURFACE_NAME, conversation_key(conversation_channel), user_id, text,
                                 str(message.id), display_name=message.author.display_name, attachments=attached,
                                 reply_to=str(reply_to) if reply_to is not None else None)
        try:
            await self.host.submit(inbound)
        except StoreError as exc:
            self._tell_held(inbound, message, exc)
            raise

    def _tell_held(self, inbound: InboundMessage, message: discord.Message, exc: StoreError) -> None:
        """Tell ``inbound``'s person that the store refused it and it waits (once: a later refusal of the
        same message says nothing), under the message, where it was written."""
        self._held.tell(inbound, exc, where=conversation_key(message.channel.id), reply_to=str(message.id))

    async def _attachments(self, message: discord.Message) -> tuple[Attachment, ...]:
        """The message's images, and its other files up to ``MAX_FILE_BYTES`` that may be text (a larger one,
        one never text, or one that could not be downloaded, comes without its data: the turn names it as
        not sent), and those of the messages it forwards; then its stickers and its poll, named as not sent
        too."""
        attached: list[Attachment] = []
        for item in [*message.attachments, *(a for s in _forwarded(message) for a in s.attachments)]:
            mime = (item.content_type or "").split(";")[0].strip() or "application/octet-stream"
            kind = download_as(mime, item.size, image_limit=MAX_IMAGE_BYTES)
            if kind is None:
                attached.append(Attachment("file", mime, b"", item.filename))
                continue
            try:
                data = await item.read()
            except PLATFORM_ERRORS as exc:
                log.warning("could not download %s from message %s: %s", f"a {kind}", message.id, exc)
                if kind == "file":
                    attached.append(Attachment("file", mime, b"", item.filename))
                continue
            attached.append(Attachment(kind, mime, data, item.filename))
        return (*attached, *_nothing_to_read(message))
