"""A fake Telegram Bot API server on 127.0.0.1 (aiohttp), driven by the real python-telegram-bot.

It speaks the Bot API as PTB calls it (``POST /bot<token>/<method>``, form values JSON-encoded)
and behaves like Telegram where the relay's behaviour depends on it:

* ``getUpdates`` long-polls and confirms by ``offset``: an update is dropped only when a later call
  asks for an offset past it, so a client killed before confirming gets it again; a newer
  ``getUpdates`` ends one still waiting with 409 ``Conflict`` (a second poller on the same token);
* ``sendMessage``/``editMessageText``/``sendMessageDraft`` check what Telegram checks: an unknown
  chat (400 ``chat not found``), a chat that removed the bot (403), empty text, more than 4096 UTF-16
  units (400 ``message is too long``), entities outside the text (400 ``can't parse entities``),
  an unknown forum topic, ``callback_data`` over 64 bytes, an identical edit (400 ``message is not
  modified``), drafts outside private chats;
* ``answerCallbackQuery`` takes each query id once; ``sendDocument`` keeps the file (``files``) and a
  message with its caption (at most 1024 UTF-16 units);
* one-shot failures: ``fail_next(method, status, description, retry_after=...)``; answers PTB cannot
  read (``answer_oddly``), updates it cannot parse (``unreadable``), methods it lacks
  (``unsupported``), a ``getMe`` of another shape (edit ``me``), a poll answered at once
  (``answers_at_once``).

``events`` is what happened in order (every call, with its arguments); ``transcript(chat)`` is the
chat as the person sees it, oldest first. Tests push updates with ``say``, ``photo`` and ``press``.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.telegram_methods import BOT_ID, ApiError, Chat, Json, MessageMethods, utf16_len

__all__ = ["BOT_ID", "TOKEN", "Call", "FakeBotApi", "utf16_len"]

TOKEN = f"{BOT_ID}:AAHfakeTokenForTests0123456789abcdef"  # the real shape: the redactor knows it


@dataclass
class Call:
    """One Bot API call as the fake received it."""

    method: str
    params: Json
    at: float = field(default_factory=time.monotonic)
    status: int = 200
    result: Any = None


class FakeBotApi(MessageMethods):
    """The server and its state. ``url`` is the Bot API root for ``api_base_url``."""

    def __init__(self, *, token: str = TOKEN, username: str = "relay_bot") -> None:
        self.token = token
        self.me: Json = {"id": BOT_ID, "is_bot": True, "first_name": "Relay", "username": username}
        self.chats: dict[int, Chat] = {}
        self.users: dict[int, Json] = {}
        self.messages: dict[tuple[int, int], Json] = {}
        self.files: dict[str, bytes] = {}
        self.events: list[Call] = []
        self.commands: list[Json] = []
        self.chat_commands: dict[int, list[Json]] = {}  # chat id -> its own menu
        #: The draft each private chat shows now (``sendMessageDraft``'s parameters): gone once the bot
        #: sends a message there, or once the person presses its Stop button (unless kept on stop).
        self.drafts: dict[int, Json] = {}
        self.webhook: Json = {}
        #: The kinds of update the bot last asked for (getUpdates, setWebhook); None: never said, so
        #: Telegram sends every kind but a few (edits too). Updates of other kinds are not kept.
        self.allowed_updates: list[str] | None = None
        self.answered: dict[str, str | None] = {}
        #: getUpdates answers at once, whatever its ``timeout`` (a server that does not long-poll).
        self.answers_at_once = False
        #: Methods this server does not have, and how it says so: "telegram" (404 "Not Found: method
        #: not found", as the Bot API does) or "emulator" (500 {"message": "... is not supported"}).
        self.unsupported: dict[str, str] = {}
        #: Called with each call as it arrives (``on_request``) and once answered, before the client has
        #: the answer (``on_call``): a hook may kill the client at that exact moment.
        self.on_request: list[Callable[[Call], None]] = []
        self.on_call: list[Callable[[Call], None]] = []
        #: While set and not yet fired, every call but getUpdates waits for it before it is handled;
        #: ``in_flight`` counts the calls being handled now, ``most_in_flight`` the most there were at once.
        self.held: asyncio.Event | None = None
        self.in_flight = 0
        self.most_in_flight = 0
        self._ids: dict[int, itertools.count[int]] = {}
        self._updates: list[Json] = []
        self._update_ids = itertools.count(1000)
        self._polls = 0  # getUpdates calls so far: a newer one ends the one still waiting (409)
        self._queries: set[str] = set()
        self._query_ids = itertools.count(1)
        self._failures: dict[str, deque[ApiError]] = {}
        self._odd: dict[str, deque[str]] = {}  # method -> how its next answers are made odd
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
        if request.match_info["method"] == "getUpdates":
            return await self._handled(request)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.held is not None:
                await self.held.wait()
            return await self._handled(request)
        finally:
            self.in_flight -= 1

    async def _handled(self, request: web.Request) -> web.Response:
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
            if self.unsupported.get(method) == "emulator":
                for hook in list(self.on_call):
                    hook(call)
                return web.json_response({"message": f"API method '{method}' is not supported."}, status=500)
            if method in self.unsupported:
                raise ApiError(404, "Not Found: method not found")
            handler = getattr(self, f"_api_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found: method not found")
            result = call.result = await handler(call.params)
            body: Json = {"ok": True, "result": result}
            odd = self._odd.get(method)
            if odd:
                return self._oddly(odd.popleft(), call, body)
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

    def _oddly(self, how: str, call: Call, body: Json) -> web.Response:
        """The call was carried out; its answer is one python-telegram-bot cannot read."""
        for hook in list(self.on_call):
            hook(call)
        if how == "not json":
            return web.Response(text="<html>OK</html>", content_type="text/html")
        result = body["result"]
        if how == "no result":
            return web.json_response({"ok": True})
        if isinstance(result, dict) and how == "date in ms":  # what telegram-test-api answers
            body = {"ok": True, "result": {**result, "date": int(result.get("date", 0)) * 1000}}
        elif isinstance(result, dict) and how == "no message_id":
            body = {"ok": True, "result": {k: v for k, v in result.items() if k != "message_id"}}
        return web.json_response(body)

    # -- test controls -------------------------------------------------------------------------

    def answer_oddly(self, method: str, how: str, *, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` are carried out, and answered in a way PTB cannot
        read: "date in ms", "no message_id", "no result" (``{"ok": true}``) or "not json"."""
        self._odd.setdefault(method, deque()).extend([how] * times)

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
        self.chats[user_id] = Chat(user_id, "private")
        return user_id

    def group(self, chat_id: int, title: str = "Team", *, forum: bool = False) -> int:
        self.chats[chat_id] = Chat(chat_id, "supergroup" if forum else "group", title, forum)
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

    def album(self, chat_id: int, photos: list[bytes], *, caption: str = "", user: int | None = None,
              group: str = "13579", captions: list[str] | None = None) -> list[Json]:
        """A person sends photos together (an album): a message each, one ``media_group_id``, the caption
        on the first, as Telegram's apps send one (``captions``: one a photo, as a person may give each)."""
        parts = []
        for i, data in enumerate(photos):
            caption = captions[i] if captions is not None else caption if i == 0 else ""
            file_id = f"photo{len(self.files) + 1}"
            self.files[f"photos/{file_id}.jpg"] = data
            msg: Json = {"from": self.user(user if user is not None else chat_id), "media_group_id": group,
                         "photo": [{"file_id": file_id, "file_unique_id": f"u{file_id}", "width": 800, "height": 800,
                                    "file_size": len(data)}]}
            if caption:
                msg["caption"] = caption
                mentions = [{"type": "mention", "offset": utf16_len(caption[:m.start()]), "length": utf16_len(m[0])}
                            for m in re.finditer(r"@\w+", caption)]
                if mentions:
                    msg["caption_entities"] = mentions
            parts.append(self._incoming(chat_id, msg, None, None))
        return parts

    def document(self, chat_id: int, data: bytes, name: str, mime: str, *, caption: str = "",
                 user: int | None = None) -> Json:
        """A person sends a file (``sendDocument`` as a person's app does it): downloadable with getFile."""
        file_id = f"sent{len(self.files) + 1}"
        self.files[f"sent/{file_id}"] = data
        msg: Json = {"from": self.user(user if user is not None else chat_id),
                     "document": {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_name": name,
                                  "mime_type": mime, "file_size": len(data)}}
        if caption:
            msg["caption"] = caption
        return self._incoming(chat_id, msg, None, None)

    def voice(self, chat_id: int, data: bytes, *, user: int | None = None) -> Json:
        """A person sends a voice message (downloadable with getFile)."""
        file_id = f"sent{len(self.files) + 1}"
        self.files[f"sent/{file_id}"] = data
        msg: Json = {"from": self.user(user if user is not None else chat_id),
                     "voice": {"file_id": file_id, "file_unique_id": f"u{file_id}", "duration": 2,
                               "mime_type": "audio/ogg", "file_size": len(data)}}
        return self._incoming(chat_id, msg, None, None)

    def sends(self, chat_id: int, fields: Json, *, user: int | None = None, reply_to: int | None = None) -> Json:
        """A person sends a message of ``fields`` alone (a sticker, a location, a poll: no text)."""
        msg: Json = {"from": self.user(user if user is not None else chat_id), **fields}
        return self._incoming(chat_id, msg, None, reply_to)

    def unreadable(self, chat_id: int, text: str, *, user: int | None = None) -> Json:
        """An update python-telegram-bot cannot parse (a message without its date), carrying ``text``:
        a newer Bot API field, or a server that answers oddly, looks like this to the library."""
        msg: Json = {"message_id": self._next_id(chat_id), "from": self.user(user if user is not None else chat_id),
                     "chat": self._chat_json(self.chats[chat_id]), "text": text}
        return self.push({"message": msg})

    def press(self, chat_id: int, message_id: int, data: str, *, user: int | None = None) -> str:
        """A person taps a button; returns the callback query id."""
        query_id = f"q{next(self._query_ids)}"
        self._queries.add(query_id)
        self.push({"callback_query": {"id": query_id, "from": self.user(user if user is not None else chat_id),
                                      "message": self.messages[(chat_id, message_id)], "chat_instance": "ci",
                                      "data": data}})
        return query_id

    def stop_draft(self, chat_id: int) -> Json:
        """The person presses the Stop button of the draft their chat shows (Bot API 10.3): a
        ``stopped_message_generation`` update is queued; the draft stays only if it was kept on stop."""
        draft = self.drafts.get(chat_id)
        assert draft is not None and draft.get("can_stop") is True, "the chat shows no draft with a Stop button"
        if draft.get("keep_on_stop") is not True:
            del self.drafts[chat_id]
        stopped: Json = {"chat": self._chat_json(self.chats[chat_id]), "draft_id": int(draft["draft_id"])}
        if draft.get("message_thread_id") is not None:
            stopped["message_thread_id"] = int(draft["message_thread_id"])
        return self.push({"stopped_message_generation": stopped})

    def edit(self, chat_id: int, message_id: int, text: str) -> Json:
        """A person edits a message of theirs: its words (or caption) change, and an ``edited_message``
        update is queued, as Telegram does (only for a bot that asked for edits). An update not fetched yet
        keeps the words it was sent with."""
        msg = self.messages[(chat_id, message_id)] = copy.deepcopy(self.messages[(chat_id, message_id)])
        msg["caption" if "caption" in msg else "text"] = text
        msg.pop("entities", None)
        mentions = [{"type": "mention", "offset": utf16_len(text[:m.start()]), "length": utf16_len(m[0])}
                    for m in re.finditer(r"@\w+", text)]
        if mentions:
            msg["caption_entities" if "caption" in msg else "entities"] = mentions
        msg["edit_date"] = int(time.time())
        return self.push({"edited_message": {k: v for k, v in msg.items() if not k.startswith("_")}})

    def push(self, update: Json) -> Json:
        update = {"update_id": next(self._update_ids), **update}
        kind = next(k for k in update if k != "update_id")
        if self.allowed_updates and kind not in self.allowed_updates:  # (an empty list: every kind)
            return update  # Telegram keeps it to itself
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
            edits = f" (edited {m['_edits']}x)" if m.get("_edits") else " (edited)" if m.get("edit_date") else ""
            lines.append(f"{who}: {text}{' ' + buttons if buttons else ''}{edits}")
        return lines

    # -- the Bot API -----------------------------------------------------------------------------

    def _next_id(self, chat_id: int) -> int:
        return next(self._ids.setdefault(chat_id, itertools.count(1)))

    def _chat_json(self, chat: Chat) -> Json:
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
        if msg["from"]["id"] == BOT_ID:
            self.drafts.pop(chat_id, None)  # a message of the bot's replaces its draft
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

    async def _api_getMe(self, params: Json) -> Json:
        return self.me

    async def _api_setMyCommands(self, params: Json) -> bool:
        """Telegram's checks: at most 100 commands, names of 1-32 of a-z, 0-9 and _, descriptions of
        1-256 characters. A ``chat`` scope sets that chat's menu (``chat_commands``)."""
        commands = params.get("commands") or []
        if isinstance(commands, str):
            commands = json.loads(commands)
        if len(commands) > 100:
            raise ApiError(400, "Bad Request: too many commands")
        for command in commands:
            if not re.fullmatch(r"[a-z0-9_]{1,32}", str(command.get("command", ""))):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise ApiError(400, "Bad Request: command description is invalid")
        scope = params.get("scope")
        if isinstance(scope, str):
            scope = json.loads(scope)
        if isinstance(scope, dict) and scope.get("type") == "chat":
            self.chat_commands[int(scope["chat_id"])] = list(commands)
        else:
            self.commands = list(commands)
        return True

    async def _api_deleteWebhook(self, params: Json) -> bool:
        self.webhook = {}
        return True

    async def _api_setWebhook(self, params: Json) -> bool:
        self.webhook = {"url": params.get("url"), "secret_token": params.get("secret_token")}
        self._allow(params)
        return True

    def _allow(self, params: Json) -> None:
        """``allowed_updates`` given: from now on only those kinds are kept (none given: as before)."""
        allowed = params.get("allowed_updates")
        if allowed is not None:
            self.allowed_updates = list(json.loads(allowed) if isinstance(allowed, str) else allowed)

    async def _api_getUpdates(self, params: Json) -> list[Json]:
        self._allow(params)
        if self.webhook:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active; "
                                "use deleteWebhook to delete the webhook first")
        # A newer getUpdates ends the one still waiting with a 409, as Telegram does (two pollers).
        self._polls += 1
        mine = self._polls
        async with self._arrived:
            self._arrived.notify_all()
        return await self._updates_for(params, lambda: self._polls != mine)

    async def _updates_for(self, params: Json, superseded: Callable[[], bool]) -> list[Json]:
        offset = params.get("offset")
        if offset is not None:  # confirms everything before it
            self._updates = [u for u in self._updates if u["update_id"] >= int(offset)]
        limit = int(params.get("limit") or 100)
        if not self._updates and float(params.get("timeout") or 0) > 0 and not self.answers_at_once:
            async with self._arrived:
                try:
                    await asyncio.wait_for(self._arrived.wait_for(lambda: bool(self._updates) or superseded()),
                                           float(params["timeout"]))
                except TimeoutError:
                    pass
        if superseded():
            raise ApiError(409, "Conflict: terminated by other getUpdates request; make sure that only one bot "
                                "instance is running")
        return self._updates[:limit]
