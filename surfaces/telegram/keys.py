"""Conversation keys and what each kind of Telegram chat can do.

A private chat is one conversation (``telegram:<chat>``); in a forum supergroup each topic is its
own (``telegram:<chat>:<topic>``), and every topic of a group shares the group's pace
(``rate_key`` is ``telegram:<chat>``). Telegram's chat ids say the kind: a private chat's id is the
person's user id (positive), a group's or channel's is negative.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from telegram.constants import FloodLimit, MessageLimit

from core.surface_api import Capabilities, DeliveryFailed, RateLimit

__all__ = ["GROUP", "PRIVATE", "SURFACE_NAME", "ChatRef", "capabilities_for", "conversation_key", "parse_key",
           "rate_key"]

SURFACE_NAME = "telegram"
_PREFIX = f"{SURFACE_NAME}:"

#: Groups: about 20 messages a minute (edits included), shared by every topic; no drafts.
GROUP = Capabilities(
    max_message_length=MessageLimit.MAX_TEXT_LENGTH, length_unit="utf16", can_edit=True, can_delete=True,
    can_stream_natively=False, can_buttons=True, stop_button=True, can_typing=True,
    edit_interval_s=60.0 / FloodLimit.MESSAGES_PER_MINUTE_PER_GROUP,
    # A few at once after a quiet moment, so an answer is not held back for the previous one's slot.
    rate_limit=RateLimit(FloodLimit.MESSAGES_PER_MINUTE_PER_GROUP, 60.0, burst=3),
    # Telegram shows "typing" for 5 s, or until the bot's next message.
    typing_refresh_s=4.0, max_file_bytes=50 * 1024 * 1024)
#: Private chats: about one message a second; the reply streams as a draft (``sendMessageDraft``).
PRIVATE = replace(GROUP, can_stream_natively=True, edit_interval_s=1.0,
                  rate_limit=RateLimit(FloodLimit.MESSAGES_PER_SECOND_PER_CHAT, 1.0, burst=3))


@dataclass(frozen=True, slots=True)
class ChatRef:
    """Where a conversation lives: the chat, and the forum topic (None: the chat itself)."""

    chat_id: int
    topic_id: int | None = None

    @property
    def private(self) -> bool:
        """A one-to-one chat with a person."""
        return self.chat_id > 0


def conversation_key(chat_id: int, topic_id: int | None = None) -> str:
    """``telegram:<chat>`` or, for a forum topic, ``telegram:<chat>:<topic>``."""
    return f"{_PREFIX}{chat_id}" if topic_id is None else f"{_PREFIX}{chat_id}:{topic_id}"


def parse_key(key: str) -> ChatRef:
    """The chat (and topic) of a conversation key; ``DeliveryFailed`` for one that is not Telegram's."""
    rest = key.removeprefix(_PREFIX)
    chat, _, topic = rest.partition(":")
    try:
        if rest == key or not chat:
            raise ValueError(key)
        return ChatRef(int(chat), int(topic) if topic else None)
    except ValueError:
        raise DeliveryFailed(f"not a Telegram conversation: {key!r}") from None


def capabilities_for(key: str) -> Capabilities:
    """Drafts and a faster pace in private chats; a group's limits elsewhere."""
    try:
        private = parse_key(key).private
    except DeliveryFailed:
        private = False
    return PRIVATE if private else GROUP


def rate_key(key: str) -> str:
    """The chat whose pace ``key`` shares: a topic shares its group's."""
    return key.rsplit(":", 1)[0] if key.count(":") == 2 else key
