"""A fake Telegram Bot API server on 127.0.0.1 (aiohttp), driven by the real python-telegram-bot.

It speaks the Bot API as PTB calls it (``POST /bot<token>/<method>``, form values JSON-encoded)
and behaves like Telegram where the relay's behaviour depends on it:

* ``getUpdates`` long-polls and confirms by ``offset``: an update is dropped only when a later call
  asks for an offset past it, so a client killed before confirming gets it again;
* ``sendMessage``/``editMessageText``/``sendMessageDraft`` check what Telegram checks: an unknown
  chat (400 ``chat not found``), a chat that removed the bot (403), empty text, more than 4096 UTF-16
  units (400 ``message is too long``), entities outside the text (400 ``can't parse entities``),
  an unknown forum topic, ``callback_data`` over 64 bytes, an identical edit (400 ``message is not
  modified``), drafts outside private chats;
* ``answerCallbackQuery`` takes each query id once; ``sendDocument`` keeps the file (``files``) and a
  message with its caption (at most 1024 UTF-16 units);
* one-shot failures: ``fail_next(method, status, description, retry_after=...)``.

``events`` is what happened in order (every call, with its arguments); ``transcript(chat)`` is the
chat as the person sees it, oldest first. Tests push updates with ``say``, ``photo`` and ``press``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

__all__ = ["BOT_ID", "TOKEN", "Call", "FakeBotApi", "utf16_len"]

BOT_ID = 7000000001
TOKEN = f"{BOT_ID}:AAHfakeTokenForTests0123456789abcdef"  # the real shape: the redactor knows it
_MAX_TEXT = 4096
_ENTITY_TYPES = {"mention", "hashtag", "cashtag", "bot_command", "url", "email", "phone_number", "bold",
                 "italic", "underline", "strikethrough", "spoiler", "blockquote", "expandable_blockquote",
                 "code", "pre", "text_link", "text_mention", "custom_emoji"}

Json = dict[str, Any]


def utf16_len(text: str) -> int:
    """Length as Telegram counts it."""
    return len(text.encode("utf-16-le")) // 2


class ApiError(Exception):
    def __init__(self, status: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters


@dataclass
class Call:
    """One Bot API call as the fake received it."""

    method: str
    params: Json
    at: float = field(default_factory=time.monotonic)
    status: int = 200
    result: Any = None


@dataclass
class _Chat:
    id: int
    type: str  # private, group, supergroup
    title: str = ""
    is_forum: bool = False
    topics: set[int] = field(default_factory=set)
    removed: bool = False  # the bot was kicked / blocked


class FakeBotApi:
    """The server and its state. ``url`` is the Bot API root for ``api_base_url``."""

    def __init__(self, *, token: str = TOKEN, username: str = "relay_bot") -> None:
        self.token = token
        self.me: Json = {"id": BOT_ID, "is_bot": True, "first_name": "Relay", "username": username}
        self.chats: dict[int, _Chat] = {}
        self.users: dict[int, Json] = {}
        self.messages: dict[tuple[int, int], Json] = {}
        self.files: dict[str, bytes] = {}
        self.events: list[Call] = []
        self.commands: list[Json] = []
        self.webhook: Json = {}
        self.answered: dict[str, str | None] = {}
        #: Called with each call as it arrives (``on_request``) and once answered, before the client has
        #: the answer (``on_call``): a hook may kill the client at that exact moment.
        self.on_request: list[Callable[[Call], None]] = []
        self.on_call: list[Callable[[Call], None]] = []
        self._ids: dict[int, itertools.count[int]] = {}
        self._updates: list[Json] = []
        self._update_ids = itertools.count(1000)
        self._queries: set[str] = set()
        self._query_ids = itertools.count(1)
        self._failures: dict[str, deque[ApiError]] = {}
        self._arrived = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.url = ""

    # -- the server ----------------------------------------------------------------------------

    async def start(self) -> FakeBotApi:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _params(self, request: web.Request) -> Json:
        if request.content_type == "application/json":
            return dict(await request.json())
        params: Json = {}
        for name, value in (await request.post()).items():
            if not isinstance(value, str):  # an uploaded file
                params[name] = {"filename": value.filename, "data": value.file.read()}
                continue
            try:
                params[name] = json.loads(value)
            except ValueError:
                params[name] = value
        return params

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        call = Call(method, await self._params(request))
        self.events.append(call)
        for hook in list(self.on_request):
            hook(call)
        try:
            if request.match_info["token"] != self.token:
                raise ApiError(401, "Unauthorized")
            queued = self._failures.get(method)
            if queued:
                raise queued.popleft()
            handler = getattr(self, f"_api_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found: method not found")
            result = call.result = await handler(call.params)
            body: Json = {"ok": True, "result": result}
        except ApiError as exc:
            call.status = exc.status
            body = {"ok": False, "error_code": exc.status, "description": exc.description}
            if exc.parameters:
                body["parameters"] = exc.parameters
        for hook in list(self.on_call):
            hook(call)
        return web.json_response(body, status=call.status)

    async def _file(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["path"])
        if request.match_info["token"] != self.token or data is None:
            return web.Response(status=404)
        return web.Response(body=data)

    # -- test controls -------------------------------------------------------------------------

    def fail_next(self, method: str, status: int, description: str, *, times: int = 1,
                  retry_after: int | None = None) -> None:
        """The next ``times`` calls of ``method`` fail like Telegram would."""
        params = {"retry_after": retry_after} if retry_after is not None else {}
        self._failures.setdefault(method, deque()).extend(ApiError(status, description, **params)
                                                          for _ in range(times))

    def user(self, user_id: int, name: str = "Ada") -> Json:
        return self.users.setdefault(user_id, {"id": user_id, "is_bot": False, "first_name": name})

    def private(self, user_id: int, name: str = "Ada") -> int:
        """A private chat with a person (its id is theirs)."""
        self.user(user_id, name)
        self.chats[user_id] = _Chat(user_id, "private")
        return user_id

    def group(self, chat_id: int, title: str = "Team", *, forum: bool = False) -> int:
        self.chats[chat_id] = _Chat(chat_id, "supergroup" if forum else "group", title, forum)
        return chat_id

    def topic(self, chat_id: int, name: str) -> int:
        """A forum topic: its id is the id of the service message that opened it."""
        opened = self._store(chat_id, {"from": self.user(1, "Owner"), "forum_topic_created": {
            "name": name, "icon_color": 7322096}})
        topic = opened["message_id"]
        opened.update(message_thread_id=topic, is_topic_message=True)
        self.chats[chat_id].topics.add(topic)
        return topic

    def remove_bot(self, chat_id: int) -> None:
        """The bot was kicked (or blocked): Telegram answers 403 from now on."""
        self.chats[chat_id].removed = True

    def say(self, chat_id: int, text: str, *, user: int | None = None, topic: int | None = None,
            reply_to: int | None = None, extra: Json | None = None) -> Json:
        """A person writes: the message is stored and an update queued. Commands and @mentions get
        their entities, as Telegram's clients send them."""
        msg: Json = {"from": self.user(user if user is not None else chat_id), "text": text}
        entities = []
        if text.startswith("/"):
            entities.append({"type": "bot_command", "offset": 0, "length": utf16_len(text.split(" ", 1)[0])})
        for i, word in enumerate(text.split(" ")):
            if word.startswith("@") and len(word) > 1:
                start = utf16_len(" ".join(text.split(" ")[:i]) + (" " if i else ""))
                entities.append({"type": "mention", "offset": start, "length": utf16_len(word)})
        if entities:
            msg["entities"] = entities
        msg.update(extra or {})
        return self._incoming(chat_id, msg, topic, reply_to)

    def photo(self, chat_id: int, data: bytes, *, caption: str = "", user: int | None = None,
              topic: int | None = None) -> Json:
        file_id = f"photo{len(self.files) + 1}"
        self.files[f"photos/{file_id}.jpg"] = data
        sizes = [{"file_id": f"{file_id}-small", "file_unique_id": "s", "width": 90, "height": 90},
                 {"file_id": file_id, "file_unique_id": "u", "width": 800, "height": 800, "file_size": len(data)}]
        msg: Json = {"from": self.user(user if user is not None else chat_id), "photo": sizes}
        if caption:
            msg["caption"] = caption
        return self._incoming(chat_id, msg, topic, None)

    def press(self, chat_id: int, message_id: int, data: str, *, user: int | None = None) -> str:
        """A person taps a button; returns the callback query id."""
        query_id = f"q{next(self._query_ids)}"
        self._queries.add(query_id)
        self.push({"callback_query": {"id": query_id, "from": self.user(user if user is not None else chat_id),
                                      "message": self.messages[(chat_id, message_id)], "chat_instance": "ci",
                                      "data": data}})
        return query_id

    def push(self, update: Json) -> Json:
        update = {"update_id": next(self._update_ids), **update}
        self._updates.append(update)
        asyncio.get_running_loop().create_task(self._notify())
        return update

    async def _notify(self) -> None:
        async with self._arrived:
            self._arrived.notify_all()

    async def deliver(self, *, secret: str | None = None, url: str | None = None) -> list[int]:
        """Webhook mode: post each pending update to the URL given to ``setWebhook``, with its secret
        (or ``secret``); an update answered 200 is delivered, any other is kept. Returns the statuses."""
        target = url or str(self.webhook["url"])
        token = self.webhook.get("secret_token") if secret is None else secret
        headers = {"X-Telegram-Bot-Api-Secret-Token": token} if token else {}
        statuses = []
        async with aiohttp.ClientSession() as session:
            for update in list(self._updates):
                async with session.post(target, json=update, headers=headers) as response:
                    statuses.append(response.status)
                if response.status == 200:
                    self._updates.remove(update)
        return statuses

    @property
    def pending_updates(self) -> list[Json]:
        return list(self._updates)

    # -- what the person sees ------------------------------------------------------------------

    def calls(self, method: str | None = None) -> list[Call]:
        return [c for c in self.events if method is None or c.method == method]

    def bot_messages(self, chat_id: int, topic: int | None = None) -> list[Json]:
        return [m for (c, _), m in sorted(self.messages.items()) if c == chat_id and m["from"]["id"] == BOT_ID
                and (topic is None or m.get("message_thread_id") == topic)]

    def transcript(self, chat_id: int, topic: int | None = None) -> list[str]:
        """The chat, oldest first: ``you: ...`` and ``bot: ...`` (with its buttons and edit count)."""
        lines = []
        for (c, _), m in sorted(self.messages.items()):
            if c != chat_id or (topic is not None and m.get("message_thread_id") != topic):
                continue
            if "forum_topic_created" in m:
                lines.append(f"-- topic {m['forum_topic_created']['name']!r} --")
                continue
            who = "bot" if m["from"]["id"] == BOT_ID else "you"
            text = m.get("text") or m.get("caption") or ("[photo]" if "photo" in m else "")
            rows = m.get("reply_markup", {}).get("inline_keyboard", [])
            buttons = " ".join(f"[{b['text']}]" for row in rows for b in row)
            edits = f" (edited {m['_edits']}x)" if m.get("_edits") else ""
            lines.append(f"{who}: {text}{' ' + buttons if buttons else ''}{edits}")
        return lines

    # -- the Bot API -----------------------------------------------------------------------------

    def _next_id(self, chat_id: int) -> int:
        return next(self._ids.setdefault(chat_id, itertools.count(1)))

    def _chat_json(self, chat: _Chat) -> Json:
        out: Json = {"id": chat.id, "type": chat.type}
        if chat.type == "private":
            out["first_name"] = self.users.get(chat.id, {}).get("first_name", "")
        else:
            out["title"] = chat.title
        if chat.is_forum:
            out["is_forum"] = True
        return out

    def _store(self, chat_id: int, msg: Json) -> Json:
        msg = {"message_id": self._next_id(chat_id), "date": int(time.time()),
               "chat": self._chat_json(self.chats[chat_id]), **msg}
        self.messages[(chat_id, msg["message_id"])] = msg
        return msg

    def _incoming(self, chat_id: int, msg: Json, topic: int | None, reply_to: int | None) -> Json:
        if topic is not None:
            msg.update(message_thread_id=topic, is_topic_message=True)
        earlier = reply_to if reply_to is not None else topic  # in a topic, Telegram replies to its opener
        if earlier is not None:
            msg["reply_to_message"] = {k: v for k, v in self.messages[(chat_id, earlier)].items()
                                       if not k.startswith("_")}
        stored = self._store(chat_id, msg)
        self.push({"message": stored})
        return stored

    def _chat(self, params: Json) -> _Chat:
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

    def _thread(self, chat: _Chat, params: Json) -> int | None:
        topic = params.get("message_thread_id")
        if topic is None:
            return None
        if chat.is_forum and int(topic) not in chat.topics:
            raise ApiError(400, "Bad Request: message thread not found")
        return int(topic) if chat.is_forum or chat.type == "private" else None

    async def _api_getMe(self, params: Json) -> Json:
        return self.me

    async def _api_setMyCommands(self, params: Json) -> bool:
        self.commands = list(params.get("commands") or [])
        return True

    async def _api_deleteWebhook(self, params: Json) -> bool:
        self.webhook = {}
        return True

    async def _api_setWebhook(self, params: Json) -> bool:
        self.webhook = {"url": params.get("url"), "secret_token": params.get("secret_token")}
        return True

    async def _api_getUpdates(self, params: Json) -> list[Json]:
        if self.webhook:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active; "
                                "use deleteWebhook to delete the webhook first")
        offset = params.get("offset")
        if offset is not None:  # confirms everything before it
            self._updates = [u for u in self._updates if u["update_id"] >= int(offset)]
        limit = int(params.get("limit") or 100)
        if not self._updates and float(params.get("timeout") or 0) > 0:
            async with self._arrived:
                try:
                    await asyncio.wait_for(self._arrived.wait_for(lambda: bool(self._updates)),
                                           float(params["timeout"]))
                except TimeoutError:
                    pass
        return self._updates[:limit]

    async def _api_sendMessage(self, params: Json) -> Json:
        chat = self._chat(params)
        text, entities = self._check_text(params)
        msg: Json = {"from": self.me, "text": text}
        if entities:
            msg["entities"] = entities
        markup = self._check_markup(params)
        if markup:
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
        path = f"photos/{file_id}.jpg"
        if path not in self.files:
            raise ApiError(400, "Bad Request: invalid file_id")
        return {"file_id": file_id, "file_unique_id": "u", "file_size": len(self.files[path]), "file_path": path}
