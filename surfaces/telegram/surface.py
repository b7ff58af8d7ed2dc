"""Telegram as a ``Surface``: the core's sends, edits, buttons, typing and drafts as Bot API calls.

Text arrives as neutral Markdown and leaves as text plus entities (``render``); ``plain`` sends it
as it is, with no entities and no escapes. Buttons are an inline keyboard whose ``callback_data``
is the core's one-time token. In private chats a reply streams as a draft (``sendMessageDraft``):
a draft is only a preview, so ``end_stream`` returns None and the core sends the final text as an
ordinary message. The rest of an answer too long to show is a document (``sendDocument``). Every
PTB error leaves as one of the core's delivery errors (``errors``).
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Collection, Mapping

from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InputFile,
    LinkPreviewOptions,
    MessageEntity,
    ReplyParameters,
)
from telegram.constants import ChatAction, KeyboardButtonStyle, MessageLimit

from core.engine.surface import (
    Button,
    Capabilities,
    DeliveryFailed,
    MarkupRejected,
    MessageTooLong,
    SurfaceDefaults,
    measure,
)
from surfaces.telegram import keys
from surfaces.telegram.errors import delivery_errors
from surfaces.telegram.render import render, render_text
from surfaces.telegram.wording import COMMANDS

__all__ = ["TelegramSurface"]

_NO_PREVIEW = LinkPreviewOptions(is_disabled=True)  # an agent's links are references, not headlines
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

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        #: The bot's own @username (from getMe), so ``/stop@OtherBot`` is not taken as ours.
        self.bot_usernames: Collection[str] = frozenset()
        self._draft_ids = itertools.count(secrets.randbelow(2**30) + 1)

    def identify(self, username: str | None) -> None:
        """Learn the bot's @username once getMe has answered."""
        self.bot_usernames = frozenset({username}) if username else frozenset()

    def render(self, markdown: str) -> str:
        """The text Telegram shows (and counts): entities carry the formatting."""
        return render_text(markdown)

    def capabilities_for(self, conversation_key: str) -> Capabilities:
        """Drafts and one message a second in private chats; a group's pace elsewhere."""
        return keys.capabilities_for(conversation_key)

    def rate_key(self, conversation_key: str) -> str:
        """A forum topic shares its group's pace."""
        return keys.rate_key(conversation_key)

    def _body(self, text: str, plain: bool) -> tuple[str, list[MessageEntity]]:
        body, entities = (text, []) if plain else render(text)
        if not body.strip():  # nothing left once rendered: the Markdown itself is better than nothing
            if plain or not text.strip():
                raise MarkupRejected("nothing to show")
            body, entities = text, []
        length = measure(body, "utf16")
        if length > self.capabilities.max_message_length:
            raise MessageTooLong(f"{length} UTF-16 units; Telegram takes {self.capabilities.max_message_length}")
        return body, entities

    async def send(self, conversation_key: str, text: str, *, buttons: tuple[Button, ...] = (),
                   plain: bool = False, reply_to: str | None = None) -> str:
        """``sendMessage`` into the chat (the topic, in a forum); returns the message id."""
        ref = keys.parse_key(conversation_key)
        body, entities = self._body(text, plain)
        with delivery_errors("sendMessage"):
            sent = await self.bot.send_message(
                ref.chat_id, body, entities=entities or None, message_thread_id=ref.topic_id,
                reply_parameters=_reply(reply_to), reply_markup=_keyboard(buttons), link_preview_options=_NO_PREVIEW)
        return str(sent.message_id)

    async def send_file(self, conversation_key: str, name: str, data: bytes, *, caption: str, fallback: str,
                        reply_to: str | None = None) -> str:
        """``sendDocument`` with the caption (the rest of an answer too long to show)."""
        ref = keys.parse_key(conversation_key)
        body, entities = render(caption)
        with delivery_errors("sendDocument"):
            sent = await self.bot.send_document(
                ref.chat_id, InputFile(data, filename=name), caption=body[:MessageLimit.CAPTION_LENGTH],
                caption_entities=entities or None, message_thread_id=ref.topic_id,
                reply_parameters=_reply(reply_to))
        return str(sent.message_id)

    async def edit(self, conversation_key: str, message_id: str, text: str, *,
                   buttons: tuple[Button, ...] = (), plain: bool = False) -> None:
        """``editMessageText``; no buttons removes the keyboard (Telegram's rule for a missing markup)."""
        ref = keys.parse_key(conversation_key)
        body, entities = self._body(text, plain)
        with delivery_errors("editMessageText"):
            await self.bot.edit_message_text(
                body, chat_id=ref.chat_id, message_id=_message_id(message_id), entities=entities or None,
                reply_markup=_keyboard(buttons), link_preview_options=_NO_PREVIEW)

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """``deleteMessage`` (a reply that got shorter)."""
        ref = keys.parse_key(conversation_key)
        with delivery_errors("deleteMessage"):
            await self.bot.delete_message(ref.chat_id, _message_id(message_id))

    async def typing(self, conversation_key: str, active: bool) -> None:
        """``sendChatAction`` typing; Telegram clears it by itself (after 5 s, or at our next message)."""
        if not active:
            return
        ref = keys.parse_key(conversation_key)
        with delivery_errors("sendChatAction"):
            await self.bot.send_chat_action(ref.chat_id, ChatAction.TYPING, message_thread_id=ref.topic_id)

    async def stream(self, conversation_key: str, stream_id: str | None, text: str, *,
                     reply_to: str | None = None) -> str:
        """``sendMessageDraft`` with the whole text so far (private chats only); returns the draft id."""
        ref = keys.parse_key(conversation_key)
        if not ref.private:
            raise DeliveryFailed("Telegram shows drafts in private chats only")
        draft_id = int(stream_id) if stream_id else next(self._draft_ids)
        body, entities = self._body(text, False)
        with delivery_errors("sendMessageDraft"):
            await self.bot.send_message_draft(ref.chat_id, draft_id, body, message_thread_id=ref.topic_id,
                                              entities=entities or None)
        return str(draft_id)
