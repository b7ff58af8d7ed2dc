"""The fake Bot API's message methods: what Telegram checks when a bot sends, edits, deletes,
drafts, shows typing, answers a button or fetches a file.

A mixin of ``FakeBotApi`` (``telegram_api``), kept apart so each module stays one concept; the
shapes both use (``ApiError``, a chat, ``utf16_len``) live here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BOT_ID", "ApiError", "Chat", "Json", "MessageMethods", "utf16_len"]

BOT_ID = 7000000001
_MAX_TEXT = 4096
_ENTITY_TYPES = {"mention", "hashtag", "cashtag", "bot_command", "url", "email", "phone_number", "bold",
                 "italic", "underline", "strikethrough", "spoiler", "blockquote", "expandable_blockquote",
                 "code", "pre", "text_link", "text_mention", "custom_emoji"}

Json = dict[str, Any]


def utf16_len(text: str) -> int:
    """Length as Telegram counts it."""
    return len(text.encode("utf-16-le")) // 2


class ApiError(Exception):
    """A Bot API error answer: its HTTP status, description and parameters (``retry_after``)."""

    def __init__(self, status: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters


@dataclass
class Chat:
    id: int
    type: str  # private, group, supergroup
    title: str = ""
    is_forum: bool = False
    topics: set[int] = field(default_factory=set)
    removed: bool = False  # the bot was kicked / blocked


class MessageMethods:
    """sendMessage, sendDocument, editMessageText, deleteMessage, sendMessageDraft, sendChatAction,
    answerCallbackQuery and getFile, with Telegram's checks."""

    me: Json
    chats: dict[int, Chat]
    messages: dict[tuple[int, int], Json]
    files: dict[str, bytes]
    answered: dict[str, str | None]
    drafts: dict[int, Json]
    _queries: set[str]
    _ids: dict[int, itertools.count[int]]

    def _store(self, chat_id: int, msg: Json) -> Json:
        raise NotImplementedError

    def _chat(self, params: Json) -> Chat:
        chat = self.chats.get(int(params.get("chat_id", 0)))
        if chat is None:
            raise ApiError(400, "Bad Request: chat not found")
        if chat.removed:
            raise ApiError(403, "Forbidden: bot was blocked by the user" if chat.type == "private"
                           else "Forbidden: bot was kicked from the group chat")
        return chat

    def _check_text(self, params: Json) -> tuple[str, list[Json]]:
        text = str(params.get("text", ""))
        if not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if utf16_len(text) > _MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        entities = list(params.get("entities") or [])
        size = utf16_len(text)
        for e in entities:
            offset, length = int(e.get("offset", -1)), int(e.get("length", 0))
            if e.get("type") not in _ENTITY_TYPES or offset < 0 or length <= 0 or offset + length > size:
                raise ApiError(400, f"Bad Request: can't parse entities: bad entity {e!r}")
        return text, entities

    def _check_markup(self, params: Json) -> Json | None:
        markup = params.get("reply_markup")
        if not markup:
            return None
        for row in markup.get("inline_keyboard", []):
            for button in row:
                if len(str(button.get("callback_data", "")).encode()) > 64:
                    raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
        return dict(markup)

    def _thread(self, chat: Chat, params: Json) -> int | None:
        topic = params.get("message_thread_id")
        if topic is None:
            return None
        if chat.is_forum and int(topic) not in chat.topics:
            raise ApiError(400, "Bad Request: message thread not found")
        return int(topic) if chat.is_forum or chat.type == "private" else None

    async def _api_sendMessage(self, params: Json) -> Json:
        chat = self._chat(params)
        text, entities = self._check_text(params)
        msg: Json = {"from": self.me, "text": text}
        if entities:
            msg["entities"] = entities
        markup = self._check_markup(params)
        if markup and markup.get("force_reply"):
            msg["_force_reply"] = markup  # Telegram opens the reply box; only inline keyboards come back
        elif markup:
            msg["reply_markup"] = markup
        topic = self._thread(chat, params)
        if topic is not None:
            msg.update(message_thread_id=topic, is_topic_message=True)
        replied = (params.get("reply_parameters") or {}).get("message_id")
        if replied is not None and (chat.id, int(replied)) in self.messages:
            msg["reply_to_message"] = self.messages[(chat.id, int(replied))]
        return self._store(chat.id, msg)

    async def _api_sendDocument(self, params: Json) -> Json:
        chat = self._chat(params)
        upload = params.get("document")
        if not isinstance(upload, dict) or not upload.get("data"):
            raise ApiError(400, "Bad Request: there is no document in the request")
        caption = str(params.get("caption", ""))
        if utf16_len(caption) > 1024:
            raise ApiError(400, "Bad Request: message caption is too long")
        file_id = f"doc{len(self.files) + 1}"
        self.files[f"documents/{file_id}"] = upload["data"]
        msg: Json = {"from": self.me, "caption": caption,
                     "document": {"file_id": file_id, "file_unique_id": file_id, "file_name": upload["filename"],
                                  "file_size": len(upload["data"])}}
        topic = self._thread(chat, params)
        if topic is not None:
            msg.update(message_thread_id=topic, is_topic_message=True)
        return self._store(chat.id, msg)

    async def _api_sendPhoto(self, params: Json) -> Json:
        """Telegram takes a photo of at most 10 MB that its decoder can read (here: PNG or JPEG bytes)."""
        chat = self._chat(params)
        upload = params.get("photo")
        if not isinstance(upload, dict) or not upload.get("data"):
            raise ApiError(400, "Bad Request: there is no photo in the request")
        data = upload["data"]
        if not (data.startswith(b"\x89PNG\r\n\x1a\n") or data.startswith(b"\xff\xd8\xff")):
            raise ApiError(400, "Bad Request: IMAGE_PROCESS_FAILED")
        if len(data) > 10 * 1024 * 1024:
            raise ApiError(400, "Bad Request: PHOTO_INVALID_DIMENSIONS")
        file_id = f"photo{len(self.files) + 1}"
        self.files[f"photos/{file_id}"] = data
        msg: Json = {"from": self.me, "caption": str(params.get("caption", "")),
                     "photo": [{"file_id": file_id, "file_unique_id": file_id, "width": 1, "height": 1,
                                "file_size": len(data)}]}
        topic = self._thread(chat, params)
        if topic is not None:
            msg.update(message_thread_id=topic, is_topic_message=True)
        return self._store(chat.id, msg)

    async def _api_editMessageText(self, params: Json) -> Json:
        chat = self._chat(params)
        msg = self.messages.get((chat.id, int(params.get("message_id", 0))))
        if msg is None or msg["from"]["id"] != BOT_ID:
            raise ApiError(400, "Bad Request: message to edit not found")
        text, entities = self._check_text(params)
        markup = self._check_markup(params)
        if (text, entities, markup) == (msg.get("text"), msg.get("entities", []), msg.get("reply_markup")):
            raise ApiError(400, "Bad Request: message is not modified: specified new message content and "
                                "reply markup are exactly the same as a current content and reply markup "
                                "of the message")
        msg.update(text=text, entities=entities, _edits=msg.get("_edits", 0) + 1)
        msg.pop("reply_markup", None)  # no markup in an edit removes the keyboard
        if markup:
            msg["reply_markup"] = markup
        return msg

    async def _api_deleteMessage(self, params: Json) -> bool:
        chat = self._chat(params)
        if self.messages.pop((chat.id, int(params.get("message_id", 0))), None) is None:
            raise ApiError(400, "Bad Request: message to delete not found")
        return True

    async def _api_sendMessageDraft(self, params: Json) -> bool:
        chat = self._chat(params)
        if chat.type != "private":
            raise ApiError(400, "Bad Request: TEXTDRAFT_PEER_INVALID")
        if not int(params.get("draft_id", 0)):
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        self._check_text(params)
        self.drafts[chat.id] = params
        return True

    async def _api_sendChatAction(self, params: Json) -> bool:
        self._thread(self._chat(params), params)
        return True

    async def _api_answerCallbackQuery(self, params: Json) -> bool:
        query_id = str(params.get("callback_query_id"))
        if query_id not in self._queries or query_id in self.answered:
            raise ApiError(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        self.answered[query_id] = params.get("text")
        return True

    async def _api_getFile(self, params: Json) -> Json:
        file_id = str(params.get("file_id"))
        path = f"sent/{file_id}" if f"sent/{file_id}" in self.files else f"photos/{file_id}.jpg"
        if path not in self.files:
            raise ApiError(400, "Bad Request: invalid file_id")
        return {"file_id": file_id, "file_unique_id": "u", "file_size": len(self.files[path]), "file_path": path}
