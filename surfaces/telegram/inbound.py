"""Telegram updates as the core's neutral inbound data: a message, a button press, or nothing.

Rules of who is heard where:

* A private chat is one conversation and everything said in it is for the bot.
* In a group (a forum topic included, which is its own conversation) the bot hears a message that
  mentions it, replies to one of its messages, or is one of its commands (``/new`` or
  ``/new@ThisBot``); the mention is taken out of the text. A command addressed to another bot
  (``/stop@OtherBot``) is dropped here, so it never reaches the engine (nor its refusal).
* Messages from bots and channels, and service messages (nothing to read), are dropped.

In a forum every message of a topic "replies" to the topic's opening service message, so only a
reply to a message the bot wrote counts as a reply to the bot.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from telegram import Bot, CallbackQuery, Message, MessageEntity, Update, User
from telegram.constants import ChatType

from core.surface_api import MAX_FILE_BYTES, Attachment, ButtonPress, InboundMessage, download_as, forwarded_text
from surfaces.telegram.keys import SURFACE_NAME, conversation_key
from surfaces.telegram.wording import COMMANDS

__all__ = ["MAX_IMAGE_BYTES", "Attached", "Incoming", "album_in", "fetch_attached", "message_in", "press_in"]

#: The Bot API lets a bot download files up to 20 MB.
MAX_IMAGE_BYTES = 20 * 1024 * 1024


#: What a person can send that carries no text and no file, as the notice names it (a venue before the
#: location it also carries).
_NOTHING_TO_READ = ("sticker", "venue", "location", "contact", "poll", "dice", "game", "story", "checklist")


@dataclass(frozen=True, slots=True)
class Attached:
    """The image or file a message came with, still to fetch (a Telegram file id)."""

    kind: Literal["image", "file"]
    file_id: str
    mime: str
    name: str = ""
    size: int | None = None  # as Telegram says, when it does


@dataclass(frozen=True, slots=True)
class Incoming:
    """A message for the engine, and what it came with still to fetch (an album's every part)."""

    message: InboundMessage
    attached: tuple[Attached, ...] = ()


def _topic(message: Message) -> int | None:
    return message.message_thread_id if getattr(message, "is_topic_message", False) else None


def _command(message: Message, text: str) -> tuple[str, str] | None:
    """The leading ``/command`` and the bot it names ('' when it names none)."""
    first: MessageEntity | None = (message.entities or (None,))[0]
    if first is None or first.type != MessageEntity.BOT_COMMAND or first.offset != 0:
        return None
    word, _, name = message.parse_entity(first).partition("@")
    return word.lower(), name


def _mentions(message: Message, me: User) -> bool:
    for entity, value in message.parse_entities([MessageEntity.MENTION, MessageEntity.TEXT_MENTION]).items():
        if entity.type == MessageEntity.TEXT_MENTION and entity.user is not None and entity.user.id == me.id:
            return True
        if entity.type == MessageEntity.MENTION and me.username and value.lower() == f"@{me.username.lower()}":
            return True
    for value in message.parse_caption_entities([MessageEntity.MENTION]).values():
        if me.username and value.lower() == f"@{me.username.lower()}":
            return True
    return False


def _replies_to_bot(message: Message, me: User) -> bool:
    earlier = message.reply_to_message
    return (earlier is not None and earlier.forum_topic_created is None and earlier.from_user is not None
            and earlier.from_user.id == me.id)


def _strip_mention(text: str, me: User) -> str:
    if not me.username:
        return text.strip()
    return re.sub(rf"(?i)@{re.escape(me.username)}\b", "", text).strip()


def _attached(message: Message) -> Attached | None:
    if message.photo:
        photo = message.photo[-1]  # sizes come smallest first
        return Attached("image", photo.file_id, "image/jpeg", size=photo.file_size)
    for media, what in ((message.voice, "voice message"), (message.video_note, "video message"),
                        (message.audio, "audio"), (message.video, "video"), (message.animation, "animation")):
        if media is not None:  # never text: named as not sent, never downloaded
            return Attached("file", media.file_id, getattr(media, "mime_type", None) or "application/octet-stream",
                            getattr(media, "file_name", None) or what, media.file_size)
    doc = message.document
    if doc is None:
        return _nothing_to_read(message)
    mime = doc.mime_type or "application/octet-stream"
    if mime.startswith("image/") and (doc.file_size or 0) <= MAX_IMAGE_BYTES:
        return Attached("image", doc.file_id, mime, doc.file_name or "", doc.file_size)
    return Attached("file", doc.file_id, mime, doc.file_name or "", doc.file_size)


def _nothing_to_read(message: Message) -> Attached | None:
    """A sticker, a location, a poll...: nothing the agent could read, named as not sent (so the person
    is not met with silence); None for a message of none of these (a service message)."""
    for field in _NOTHING_TO_READ:
        if getattr(message, field, None):
            # Never fetched: a media type that is never text, and no file to download.
            return Attached("file", "", f"application/vnd.telegram.{field}", field)
    return None


def message_in(update: Update, me: User) -> Incoming | None:
    """The message ``update`` carries for this bot, or None when it is not for the bot: a person's edit
    of a message of theirs comes as its new words (``InboundMessage.edits``), with its file (which the core
    reads only when the edit makes the message the bot's: a mention added)."""
    if update.edited_message is not None:
        return _edit_in(update.edited_message, update.update_id, me)
    return None if update.message is None else _message_in(update.message, me)


def _edit_in(message: Message, update_id: int, me: User) -> Incoming | None:
    """An edit, under the id of its update (Telegram sends the same update again, never another with
    it); a live location moving is an edit too, with no words: nothing for the agent."""
    read = _message_in(message, me)
    if read is None or not (message.text or message.caption):
        return None
    edited = read.message
    return Incoming(dataclasses.replace(edited, message_id=f"{edited.message_id}:edit:{update_id}",
                                        edits=edited.message_id), read.attached)


def album_in(parts: Sequence[Message], me: User) -> Incoming | None:
    """The parts of an album (photos or files sent together, a message each) as one message: read as the
    part that carries the words (the caption, where a group's mention is), with every part's file, and
    the caption a person gave any other part after its own (in order); None when no part is for the bot."""
    readings = [_message_in(part, me) for part in parts]
    found = [r for r in readings if r is not None]
    lead = next((r for r in found if r.message.text.strip()), found[0] if found else None)
    if lead is None:
        return None
    words = [r.message.text if r is not None else _strip_mention(part.caption or "", me)
             for part, r in zip(parts, readings, strict=True)]
    text = "\n\n".join(w.strip() for w in words if w.strip())
    return Incoming(dataclasses.replace(lead.message, text=text),
                    tuple(a for part in parts if (a := _attached(part)) is not None))


def _message_in(message: Message, me: User) -> Incoming | None:
    if message.from_user is None or message.from_user.is_bot:
        return None
    chat = message.chat
    if chat.type == ChatType.CHANNEL:
        return None
    text = message.text or message.caption or ""
    attached = _attached(message)
    if not text.strip() and attached is None:
        return None  # a service message (a member joined, a pin): nothing to answer
    if chat.type != ChatType.PRIVATE:
        command = _command(message, text)
        if command is not None and command[1]:
            if not me.username or command[1].lower() != me.username.lower():
                return None  # /stop@OtherBot
        elif not (command is not None and command[0] in COMMANDS) and not _mentions(message, me) \
                and not _replies_to_bot(message, me):
            return None
        if command is None:
            text = _strip_mention(text, me)
    if message.forward_origin is not None and text.strip():  # someone else's words (a comment is a message of its own)
        text = forwarded_text(text.strip())
    user = message.from_user
    inbound = InboundMessage(SURFACE_NAME, conversation_key(chat.id, _topic(message)), str(user.id), text,
                             f"{chat.id}:{message.message_id}", display_name=user.full_name)
    return Incoming(inbound, () if attached is None else (attached,))


def press_in(query: CallbackQuery) -> ButtonPress | None:
    """A tap on one of the relay's buttons (its data is the core's one-time token)."""
    message = query.message
    if message is None or not isinstance(query.data, str):
        return None
    key = conversation_key(message.chat.id, _topic(message) if isinstance(message, Message) else None)
    return ButtonPress(SURFACE_NAME, key, str(query.from_user.id), query.data, str(message.message_id))


async def fetch_attached(bot: Bot, attached: Attached, *, timeout_s: float = 30.0) -> Attachment | None:
    """Download ``attached`` (``getFile``, then the file itself). A file past ``MAX_FILE_BYTES`` is not
    downloaded: it comes without its data (the turn says it was not sent); None: an image too large."""
    limit = MAX_IMAGE_BYTES if attached.kind == "image" else MAX_FILE_BYTES
    taken_as = download_as(attached.mime, attached.size or 0, image_limit=MAX_IMAGE_BYTES)
    if attached.kind == "file" and taken_as != "file":  # never text, or too large (a size Telegram said)
        return Attachment("file", attached.mime, b"", attached.name)
    file = await bot.get_file(attached.file_id, read_timeout=timeout_s)
    if file.file_size is not None and file.file_size > limit:
        return Attachment("file", attached.mime, b"", attached.name) if attached.kind == "file" else None
    data = await file.download_as_bytearray(read_timeout=timeout_s)
    name = attached.name or (file.file_path or "").rsplit("/", 1)[-1]
    return Attachment(attached.kind, attached.mime, bytes(data), name=name)
