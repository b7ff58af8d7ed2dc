"""Telegram as a ``Surface``: the core's sends, edits, buttons, typing and drafts as Bot API calls.

What the core shows arrives rendered by ``TelegramFormatter`` (text plus entities, from the blocks'
neutral Markdown; plain text with no entities and no escapes). Buttons are an inline keyboard whose ``callback_data``
is the core's one-time token. In private chats a reply streams as a draft (``sendMessageDraft``):
a draft is only a preview, so ``end_stream`` returns None and the core sends the final text as an
ordinary message. A draft carries Telegram's own Stop button (Bot API 10.3 ``can_stop``): pressed, it
ends the turn (``Intake``), and the words shown so far stay until the final message replaces them
(``keep_on_stop``). The rest of an answer too long to show is a document (``sendDocument``). Every
PTB error leaves as one of the core's delivery errors (``errors``).
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from telegram import (
    Bot,
    BotCommand,
    BotCommandScopeChat,
    ForceReply,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InputFile,
    LinkPreviewOptions,
    MessageEntity,
    ReplyParameters,
)
from telegram.constants import ChatAction, KeyboardButtonStyle, MessageLimit

from core.surface_api import (
    AnswerUnreadable,
    Button,
    Capabilities,
    DeliveryFailed,
    MarkupRejected,
    MessageTooLong,
    Rendered,
    SurfaceDefaults,
    command_word,
    image_kind,
    rendered_as,
)
from surfaces.telegram import keys
from surfaces.telegram.errors import NoSuchMethod, delivery_errors
from surfaces.telegram.render import TelegramFormatter, TelegramMessage
from surfaces.telegram.wording import COMMAND_MENU, COMMANDS

__all__ = ["TelegramSurface"]

log = logging.getLogger("acp_relay.telegram")

#: A draft shows Telegram's Stop button; pressed, the words so far stay until the final message comes.
_STOPPABLE = {"can_stop": True, "keep_on_stop": True}
_NO_PREVIEW = LinkPreviewOptions(is_disabled=True)  # an agent's links are references, not headlines
_PHOTO_BYTES = 10 * 1024 * 1024  # sendPhoto's limit; a larger image goes as a document
_STYLES = {"primary": KeyboardButtonStyle.PRIMARY, "danger": KeyboardButtonStyle.DANGER}


def _keyboard(buttons: tuple[Button, ...]) -> InlineKeyboardMarkup | None:
    """One button per row: labels such as "Allow for this session" and model ids are long."""
    if not buttons:
        return None
    return InlineKeyboardMarkup([[InlineKeyboardButton(b.label, callback_data=b.token, style=_STYLES.get(b.style))]
                                 for b in buttons])


def _reply(reply_to: str | None) -> ReplyParameters | None:
    """Inbound ids are ``<chat>:<message>``, the relay's own are ``<message>``."""
    if not reply_to:
        return None
    try:
        message_id = int(reply_to.rsplit(":", 1)[-1])
    except ValueError:
        return None
    return ReplyParameters(message_id=message_id, allow_sending_without_reply=True)


#: Telegram takes at most 100 commands in a menu, each described in 1-256 characters.
_MENU_MAX, _DESCRIPTION_MAX = 100, 256


def _menu_line(description: str) -> str:
    """An agent's description as one menu line (an untrusted text: on one line, cut to fit)."""
    line = " ".join(description.split())
    return line if len(line) <= _DESCRIPTION_MAX else line[:_DESCRIPTION_MAX - 1] + "…"


def _message_id(message_id: str) -> int:
    try:
        return int(message_id)
    except ValueError:
        raise DeliveryFailed(f"not a Telegram message id: {message_id!r}") from None


class TelegramSurface(SurfaceDefaults):
    """The ``Surface`` the engine calls; ``bot`` is PTB's (the Application's) bot."""

    name = keys.SURFACE_NAME
    capabilities: Capabilities = keys.GROUP
    commands: Mapping[str, str] = COMMANDS
    formatter = TelegramFormatter()

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        #: The bot's own @username (from getMe), so ``/stop@OtherBot`` is not taken as ours.
        self.bot_usernames: Collection[str] = frozenset()
        self._draft_ids = itertools.count(secrets.randbelow(2**30) + 1)
        #: The draft each conversation streams now (a Stop pressed on it ends that turn).
        self._drafts: dict[str, int] = {}
        #: Methods the Bot API server said it does not have (remembered for the run).
        self.unsupported: set[str] = set()
        self._odd_answers: set[str] = set()

    def identify(self, username: str | None) -> None:
        """Learn the bot's @username once getMe has answered."""
        self.bot_usernames = frozenset({username}) if username else frozenset()

    def capabilities_for(self, conversation_key: str, origin: object | None = None) -> Capabilities:
        """Drafts and one message a second in private chats; a group's pace elsewhere (no drafts, nor
        typing, from a server that said it has none)."""
        caps = keys.capabilities_for(conversation_key)
        if self.unsupported:
            caps = replace(caps, can_stream_natively=caps.can_stream_natively and "sendMessageDraft" not in
                           self.unsupported, can_typing=caps.can_typing and "sendChatAction" not in self.unsupported)
        return caps

    def rate_key(self, conversation_key: str) -> str:
        """A forum topic shares its group's pace."""
        return keys.rate_key(conversation_key)

    def _body(self, rendered: Rendered) -> tuple[str, list[MessageEntity]]:
        message = rendered_as(rendered, TelegramMessage)
        if not message.text.strip():
            raise MarkupRejected("nothing to show")
        if message.length > self.capabilities.max_message_length:
            limit = self.capabilities.max_message_length
            raise MessageTooLong(f"{message.length} UTF-16 units; Telegram takes {limit}")
        return message.text, list(message.entities)

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        """``sendMessage`` into the chat (the topic, in a forum); returns the message id."""
        ref = keys.parse_key(conversation_key)
        body, entities = self._body(message)
        try:
            with delivery_errors("sendMessage") as answer:
                sent = await self.bot.send_message(
                    ref.chat_id, body, entities=entities or None, message_thread_id=ref.topic_id,
                    reply_parameters=_reply(reply_to), reply_markup=_keyboard(buttons),
                    link_preview_options=_NO_PREVIEW)
            await self._open_reply_box(conversation_key, message)
        except AnswerUnreadable as exc:
            found = answer.message_id()  # PTB could not read the message; its id may still be there
            if found is None:
                raise
            if "sendMessage" not in self._odd_answers:  # a server answers so every time: said once
                self._odd_answers.add("sendMessage")
                log.info("the Bot API server answers sendMessage in a way PTB cannot read (%s); the message id "
                         "in its answer is used", exc.__cause__.__class__.__name__)
            return str(found)
        return str(sent.message_id)

    async def _open_reply_box(self, conversation_key: str, message: Rendered) -> None:
        """A form's question answered by writing: a short message that opens the reply box
        (``force_reply``; a message cannot have both it and the card's inline buttons)."""
        asks = rendered_as(message, TelegramMessage).asks
        if not asks:
            return
        ref = keys.parse_key(conversation_key)
        with delivery_errors("sendMessage"):
            await self.bot.send_message(ref.chat_id, f"✍️ {asks}", message_thread_id=ref.topic_id,
                                        reply_markup=ForceReply(selective=True, input_field_placeholder=asks[:64]))

    async def send_file(self, conversation_key: str, name: str, data: bytes, *, caption: Rendered,
                        fallback: Rendered, reply_to: str | None = None) -> str:
        """``sendPhoto`` for a PNG or JPEG of at most 10 MB (the bytes say so, not the name), else
        ``sendDocument``, with the caption."""
        ref = keys.parse_key(conversation_key)
        shown = rendered_as(caption, TelegramMessage)
        body, entities = shown.text, list(shown.entities)
        photo = image_kind(data) in ("png", "jpeg") and len(data) <= _PHOTO_BYTES
        method, send = ("sendPhoto", self.bot.send_photo) if photo else ("sendDocument", self.bot.send_document)
        with delivery_errors(method):
            sent = await send(
                ref.chat_id, InputFile(data, filename=name), caption=body[:MessageLimit.CAPTION_LENGTH],
                caption_entities=entities or None, message_thread_id=ref.topic_id,
                reply_parameters=_reply(reply_to))
        return str(sent.message_id)

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        """``editMessageText``; no buttons removes the keyboard (Telegram's rule for a missing markup)."""
        ref = keys.parse_key(conversation_key)
        body, entities = self._body(message)
        with delivery_errors("editMessageText"):
            await self.bot.edit_message_text(
                body, chat_id=ref.chat_id, message_id=_message_id(message_id), entities=entities or None,
                reply_markup=_keyboard(buttons), link_preview_options=_NO_PREVIEW)
        await self._open_reply_box(conversation_key, message)

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """``deleteMessage`` (a reply that got shorter)."""
        ref = keys.parse_key(conversation_key)
        with delivery_errors("deleteMessage"):
            await self.bot.delete_message(ref.chat_id, _message_id(message_id))

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        """``sendChatAction`` typing; Telegram clears it by itself (after 5 s, or at our next message)."""
        if not active or "sendChatAction" in self.unsupported:
            return
        ref = keys.parse_key(conversation_key)
        try:
            with delivery_errors("sendChatAction"):
                await self.bot.send_chat_action(ref.chat_id, ChatAction.TYPING, message_thread_id=ref.topic_id)
        except AnswerUnreadable:
            return  # shown (the server took it)
        except NoSuchMethod:
            self.lacks("sendChatAction", "no typing indicator is shown")

    async def stream(self, conversation_key: str, stream_id: str | None, message: Rendered, *,
                     reply_to: str | None = None, origin: object | None = None) -> str:
        """``sendMessageDraft`` with the whole text so far (private chats only); returns the draft id."""
        ref = keys.parse_key(conversation_key)
        if not ref.private:
            raise DeliveryFailed("Telegram shows drafts in private chats only")
        if "sendMessageDraft" in self.unsupported:
            raise DeliveryFailed("this Bot API server has no drafts")
        draft_id = int(stream_id) if stream_id else self._new_draft(conversation_key)
        body, entities = self._body(message)
        try:
            with delivery_errors("sendMessageDraft"):
                # (PTB 22.8 knows Bot API 10.0: the Stop button's fields go as they are.)
                await self.bot.send_message_draft(ref.chat_id, draft_id, body, message_thread_id=ref.topic_id,
                                                  entities=entities or None, api_kwargs=dict(_STOPPABLE))
        except AnswerUnreadable:
            pass  # shown: the draft's id is ours, nothing in the answer is needed
        except NoSuchMethod:
            self.lacks("sendMessageDraft", "replies are sent and edited instead of streamed as drafts")
            raise
        return str(draft_id)

    async def end_stream(self, conversation_key: str, stream_id: str, message: Rendered) -> str | None:
        """A draft is a preview: the core posts the final message itself (which replaces the draft)."""
        if self._drafts.get(conversation_key) == int(stream_id):
            del self._drafts[conversation_key]
        return None

    def _new_draft(self, conversation_key: str) -> int:
        """A fresh draft id, noted as the one ``conversation_key`` streams now."""
        draft_id = self._drafts[conversation_key] = next(self._draft_ids)
        return draft_id

    def streams(self, conversation_key: str, draft_id: int) -> bool:
        """``conversation_key``'s answer streams as draft ``draft_id`` now (not one that ended, nor one
        from before this relay started)."""
        return self._drafts.get(conversation_key) == draft_id

    async def agent_commands(self, conversation_key: str, commands: Sequence[tuple[str, str]]) -> None:
        """``setMyCommands`` scoped to this chat: the relay's menu, then the agent's own commands with
        names Telegram accepts (``create-plan`` is ``/create_plan``; typing it reaches the agent)."""
        if "setMyCommands" in self.unsupported:
            return
        ref = keys.parse_key(conversation_key)
        menu = [BotCommand(c, d) for c, d in COMMAND_MENU]
        taken = {c for c, _ in COMMAND_MENU}
        for name, description in commands:
            word = command_word(name)
            if not word or word in taken or len(menu) >= _MENU_MAX:
                continue
            taken.add(word)
            menu.append(BotCommand(word, _menu_line(description) or word))
        try:
            with delivery_errors("setMyCommands"):
                await self.bot.set_my_commands(menu, scope=BotCommandScopeChat(ref.chat_id))
        except AnswerUnreadable:
            return  # the server took it
        except NoSuchMethod:
            self.lacks("setMyCommands", "the chat shows no command menu")

    def lacks(self, method: str, meaning: str) -> None:
        """The Bot API server said it has no ``method``: never asked again in this run (one log line)."""
        if method not in self.unsupported:
            self.unsupported.add(method)
            log.warning("the Bot API server does not support %s; %s", method, meaning)
