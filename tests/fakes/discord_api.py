"""A fake Discord on 127.0.0.1: the gateway (websocket) and the REST API, for the real discord.py.

One aiohttp server serves both: ``/gateway`` speaks the gateway protocol (HELLO, heartbeat ACK,
IDENTIFY -> READY + GUILD_CREATE, RESUME -> the missed events + RESUMED, close codes such as 4014
for a refused intent), and ``/api/v10/...`` the REST routes a bot uses (messages, typing, threads,
history, interaction callbacks and followups, command sync, login). The fake keeps every channel's
messages as a person would see them (with edits counted, buttons, ephemeral and "thinking" flags),
logs every REST call in ``calls`` (``on_request`` hooks see each as it arrives), keeps the files a
message is sent with (``attachments``), answers a send whose enforced nonce it saw in the last five
minutes with the message already made, and injects one-shot errors with ``fail_next``.

Tests drive it as the people in the chat: ``say`` (a MESSAGE_CREATE), ``slash`` (an application
command), ``press`` (a button), ``drop`` (the gateway connection closes), and read it back with
``messages`` and ``transcript``. Responses carry ``Content-Type: application/json`` exactly (see
docs/platform-fakes.md: discord.py compares that header for equality). The payloads themselves, and
how a person reads a message, are in ``discord_payloads``.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable

from aiohttp import WSMsgType, web

from tests.fakes.discord_interactions import InteractionRoutes
from tests.fakes.discord_payloads import (
    APP_ID,
    BOT_ID,
    DISCORD_EPOCH_MS,
    EPHEMERAL,
    LOADING,
    MESSAGE_CONTENT_INTENT,
    Channel,
    Failure,
    Interaction,
    Json,
    buttons,
    error_response,
    failure_response,
    guild_payload,
    interaction_payload,
    json_response,
    message_payload,
    now,
    oddly,
    shown_text,
    too_long,
    transcript,
    user,
)

__all__ = ["BOT_ID", "EPHEMERAL", "LOADING", "Failure", "FakeDiscord", "shown_text", "user"]

class FakeDiscord(InteractionRoutes):
    """The fake platform. ``await start()``, then point discord.py at ``api_base`` / ``gateway_url``."""

    def __init__(self, *, token: str = "fake-bot-token", guild_id: int = 700_000_000_000_000_001,
                 channel_ids: tuple[int, ...] = (710_000_000_000_000_001, 710_000_000_000_000_002),
                 refuse_intents: bool = False, heartbeat_ms: int = 41_250) -> None:
        self.token = token
        self.guild_id = guild_id
        self.refuse_intents = refuse_intents
        self.refuse_token_at_gateway = False  # REST accepts the token, IDENTIFY is closed with 4004
        self.invalidate_resume = False  # the next RESUME is refused: the client must IDENTIFY again
        self.cdn_delay_s = 0.0  # attachments download this slowly
        self.heartbeat_ms = heartbeat_ms
        self.bot = user(BOT_ID, "relay-bot", bot=True)
        self.users: dict[int, Json] = {BOT_ID: self.bot}
        self.channels: dict[int, Channel] = {
            cid: Channel(cid, 0, guild_id, name=f"general-{i}") for i, cid in enumerate(channel_ids)}
        self.interactions: dict[int, Interaction] = {}
        self.calls: list[tuple[str, str, Json]] = []  # (method, path, body)
        self.commands: dict[str, list[Json]] = {}  # "global" or guild id -> synced commands
        self.attachments: dict[str, bytes] = {}
        self.downloads = 0  # attachment downloads served by the CDN
        self.identifies = 0
        self.resumes = 0
        self.intents: int | None = None
        #: Called with (method, path, body) as a REST call arrives, and with (method, path) once it is
        #: answered (before the client reads the answer): a hook may kill the client at that exact
        #: moment. An ``on_request`` hook that returns True drops the call before Discord acts on it.
        self.on_request: list[Callable[[str, str, Json], bool | None]] = []
        self.on_answered: list[Callable[[str, str], bool | None]] = []
        #: Awaited once each, right after the next READY is sent (before the server's GUILD_CREATE):
        #: what people write while discord.py still waits for its servers.
        self.after_ready: list[Callable[[], Awaitable[object]]] = []
        self._failures: dict[str, deque[Failure]] = {}
        self._odd: dict[str, deque[str]] = {}  # route -> how its next answers are made odd
        self._nonces: dict[tuple[int, str], tuple[Json, float]] = {}  # enforced nonces: the message, when
        self._ids = itertools.count(1)
        self._seq = 0
        self._events: list[Json] = []  # every dispatch, for RESUME
        self._socket: web.WebSocketResponse | None = None
        self._session = "fake-session-1"
        self._ready = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/cdn/{name}", self._cdn)
        app.router.add_route("*", "/api/v10/{path:.*}", self._rest)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def snowflake(self) -> int:
        return ((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) + next(self._ids)

    async def connected(self, timeout: float = 15.0) -> None:
        """Wait until a client has identified (or resumed) on the gateway."""
        await asyncio.wait_for(self._ready.wait(), timeout)

    # -- driving: what people do ------------------------------------------------------------

    def dm(self, uid: int, name: str = "") -> int:
        """The DM channel between the bot and ``uid`` (made on first use)."""
        self.users.setdefault(uid, user(uid, name or f"user{uid}"))
        for ch in self.channels.values():
            if ch.type == 1 and ch.owner_id == uid:
                return ch.id
        cid = self.snowflake()
        self.channels[cid] = Channel(cid, 1, owner_id=uid, name="")
        return cid

    async def say(self, channel_id: int, uid: int, content: str, *, mention: bool = False,
                  attachments: tuple[tuple[str, str, bytes], ...] = (), name: str = "",
                  extra: Json | None = None) -> int:
        """A person writes in a channel (``mention``: the message starts with the bot's mention; ``extra``:
        more of the message's fields, as a sticker's ``sticker_items``)."""
        author = self.users.setdefault(uid, user(uid, name or f"user{uid}"))
        if mention:
            content = f"<@{BOT_ID}> {content}"
        files = []
        for fname, mime, data in attachments:
            key = f"{self.snowflake()}-{fname}"
            self.attachments[key] = data
            files.append({"id": key.split("-")[0], "filename": fname, "size": len(data), "content_type": mime,
                          "url": f"http://127.0.0.1:{self.port}/cdn/{key}",
                          "proxy_url": f"http://127.0.0.1:{self.port}/cdn/{key}"})
        msg = self._message(self.channels[channel_id], author, content, attachments=files,
                            mentions=[self.bot] if mention else [])
        msg.update(extra or {})
        await self.dispatch("MESSAGE_CREATE", msg)
        return int(msg["id"])

    async def edit(self, channel_id: int, message_id: int, content: str) -> None:
        """A person edits a message of theirs: MESSAGE_UPDATE with the whole message and its edit time."""
        ch = self.channels[channel_id]
        msg = ch.messages[message_id] = copy.deepcopy(ch.messages[message_id])  # what was sent stays as sent
        msg.update(content=content, edited_timestamp=now())
        await self.dispatch("MESSAGE_UPDATE", msg)

    async def preview(self, channel_id: int, message_id: int) -> None:
        """Discord resolved a link in a person's message: MESSAGE_UPDATE with its embed, not edited."""
        msg = self.channels[channel_id].messages[message_id]
        msg["embeds"] = [{"type": "link", "url": "https://example.com", "title": "Example"}]
        await self.dispatch("MESSAGE_UPDATE", msg)

    def unloaded_guild(self, guild_id: int = 700_000_000_000_000_099) -> int:
        """A text channel of another server the bot is in, whose GUILD_CREATE has not come yet (a
        server that is still unavailable, or a large bot's startup): returns the channel's id."""
        cid = self.snowflake()
        self.channels[cid] = Channel(cid, 0, guild_id, name="elsewhere")
        return cid

    async def say_unreadable(self, channel_id: int, uid: int, content: str, *, live: bool = True) -> int:
        """A message discord.py cannot parse (its author is a name, not a user: an odd server), carrying
        ``content``; sent on the gateway (``live``) or only kept in the channel's history."""
        author = self.users.setdefault(uid, user(uid, f"user{uid}"))
        msg = self._message(self.channels[channel_id], author, content)
        msg["author"] = author["username"]
        if live:
            await self.dispatch("MESSAGE_CREATE", msg)
        return int(msg["id"])

    def add_message(self, channel_id: int, uid: int, content: str) -> int:
        """A message Discord has but never delivered on the gateway (sent while the bot was away)."""
        author = self.users.setdefault(uid, user(uid, f"user{uid}"))
        return int(self._message(self.channels[channel_id], author, content)["id"])

    async def slash(self, channel_id: int, uid: int, command: str, **options: str) -> int:
        """A person runs ``/command`` in a channel; returns the interaction id."""
        data = {"id": str(APP_ID + 1), "name": command, "type": 1,
                "options": [{"name": k, "type": 3, "value": v} for k, v in options.items()]}
        return await self._interaction(channel_id, uid, 2, data, kind="command", name=command)

    async def press(self, channel_id: int, uid: int, message_id: int, custom_id: str) -> int:
        """A person presses a button under ``message_id``; returns the interaction id."""
        message = self.channels[channel_id].messages[message_id]
        return await self._interaction(channel_id, uid, 3, {"custom_id": custom_id, "component_type": 2},
                                       kind="press", name=custom_id, message=message)

    async def drop(self, code: int = 4000) -> None:
        """The gateway closes the connection (the client resumes for most codes)."""
        self._ready.clear()
        if self._socket is not None:
            await self._socket.close(code=code, message=b"fake drop")

    def answer_oddly(self, route: str, how: str = "author is a name", times: int = 1) -> None:
        """The next ``times`` calls of ``route`` are carried out and answered in a way discord.py cannot
        read: "author is a name", "no id" or "not json"."""
        self._odd.setdefault(route, deque()).extend([how] * times)

    def fail_next(self, route: str, failure: Failure, times: int = 1) -> None:
        """The next ``times`` calls of ``route`` fail: send, edit, delete, typing, thread, history,
        callback, original, followup, me, sync."""
        self._failures.setdefault(route, deque()).extend([failure] * times)

    # -- reading: what people see -----------------------------------------------------------

    def messages(self, channel_id: int) -> list[Json]:
        return list(self.channels[channel_id].messages.values())

    def texts(self, channel_id: int) -> list[str]:
        return [m["content"] for m in self.messages(channel_id)]

    def bot_messages(self, channel_id: int) -> list[Json]:
        return [m for m in self.messages(channel_id) if m["author"] == self.bot]

    async def thread(self, channel_id: int, name: str, *, owner: int = 0) -> int:
        """A thread a person opened in a channel (THREAD_CREATE); returns its id."""
        parent = self.channels[channel_id]
        thread = Channel(self.snowflake(), 11, parent.guild_id, parent_id=parent.id, name=name, owner_id=owner)
        self.channels[thread.id] = thread
        await self.dispatch("THREAD_CREATE", {**thread.payload(), "newly_created": True})
        return thread.id

    def thread_for(self, message_id: int) -> Channel | None:
        ch = self.channels.get(message_id)
        return ch if ch is not None and ch.type == 11 else None

    def buttons(self, message: Json) -> list[tuple[str, str]]:
        return buttons(message)

    def thinking(self) -> list[Json]:
        """Interaction responses still showing "is thinking…"."""
        return [m for ch in self.channels.values() for m in ch.messages.values() if m["flags"] & LOADING]

    def transcript(self) -> str:
        """Every channel as a person reads it (see ``discord_payloads.transcript``)."""
        return transcript(self.channels.values())

    def calls_to(self, method: str, fragment: str) -> list[Json]:
        return [body for m, path, body in self.calls if m == method and fragment in path]

    # -- the gateway ------------------------------------------------------------------------

    async def dispatch(self, event: str, data: Json) -> None:
        self._seq += 1
        frame = {"op": 0, "t": event, "s": self._seq, "d": data}
        self._events.append(frame)
        if self._socket is not None and self._ready.is_set():
            try:
                await self._socket.send_str(json.dumps(frame))
            except ConnectionResetError:  # the client just went away: it resumes, or catches up, later
                self._ready.clear()

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._socket = ws
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}}))
        async for raw in ws:
            if raw.type != WSMsgType.TEXT:
                continue
            frame = json.loads(raw.data)
            op, data = frame.get("op"), frame.get("d") or {}
            if op == 1:
                await ws.send_str(json.dumps({"op": 11}))
            elif op == 2:
                await self._identify(ws, data)
            elif op == 6:
                await self._resume(ws, data)
        if self._socket is ws:
            self._socket = None
        return ws

    async def _identify(self, ws: web.WebSocketResponse, data: Json) -> None:
        self.identifies += 1
        self.intents = int(data.get("intents", 0))
        if data.get("token") != self.token or self.refuse_token_at_gateway:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        if self.refuse_intents and self.intents & MESSAGE_CONTENT_INTENT:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        self._session = f"fake-session-{self.identifies}"
        self._seq += 1
        ready = {"v": 10, "user": self.bot, "guilds": [{"id": str(self.guild_id), "unavailable": True}],
                 "session_id": self._session, "resume_gateway_url": self.gateway_url, "shard": [0, 1],
                 "application": {"id": str(APP_ID), "flags": 0}, "private_channels": [], "relationships": []}
        await ws.send_str(json.dumps({"op": 0, "t": "READY", "s": self._seq, "d": ready}))
        self._ready.set()
        hooks, self.after_ready = self.after_ready, []
        for hook in hooks:
            await hook()
        ours = [c for c in self.channels.values() if c.guild_id == self.guild_id]
        await self.dispatch("GUILD_CREATE", guild_payload(self.guild_id, self.bot, ours))

    async def _resume(self, ws: web.WebSocketResponse, data: Json) -> None:
        self.resumes += 1
        if data.get("session_id") != self._session or self.invalidate_resume:
            self.invalidate_resume = False
            await ws.send_str(json.dumps({"op": 9, "d": False}))  # invalid session: identify again
            return
        after = int(data.get("seq") or 0)
        for frame in self._events:
            if frame["s"] > after:
                await ws.send_str(json.dumps(frame))
        self._ready.set()
        self._seq += 1
        await ws.send_str(json.dumps({"op": 0, "t": "RESUMED", "s": self._seq, "d": {}}))

    async def _interaction(self, channel_id: int, uid: int, type_: int, data: Json, *, kind: str, name: str,
                           message: Json | None = None) -> int:
        ch = self.channels[channel_id]
        who = self.users.setdefault(uid, user(uid, f"user{uid}"))
        iid = self.snowflake()
        token = f"itoken-{iid}"
        self.interactions[iid] = Interaction(iid, token, channel_id, uid, kind, name)
        await self.dispatch("INTERACTION_CREATE", interaction_payload(iid, token, type_, ch, who, data, message))
        return iid

    # -- REST -------------------------------------------------------------------------------

    def _message(self, ch: Channel, author: Json, content: str, *, attachments: list[Json] | None = None,
                 mentions: list[Json] | None = None, components: list[Json] | None = None,
                 reference: Json | None = None, flags: int = 0, webhook: bool = False) -> Json:
        mid = self.snowflake()
        msg = message_payload(mid, ch, author, content, attachments=attachments, mentions=mentions,
                              components=components, reference=reference, flags=flags, webhook=webhook)
        ch.messages[mid] = msg
        return msg

    async def _cdn(self, request: web.Request) -> web.Response:
        self.downloads += 1
        data = self.attachments.get(request.match_info["name"])
        await asyncio.sleep(self.cdn_delay_s)
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, headers={"Content-Type": "application/octet-stream"})

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        body: Json = {}
        uploads: list[tuple[str, bytes]] = []
        if request.can_read_body and request.content_type.startswith("multipart/"):  # a message with files
            for name, value in (await request.post()).items():
                if name == "payload_json":
                    body = json.loads(str(value))
                elif not isinstance(value, str):
                    uploads.append((value.filename, value.file.read()))
        elif request.can_read_body:
            raw = await request.read()
            body = json.loads(raw) if raw else {}
        if uploads:
            body["_uploads"] = uploads
        self.calls.append((request.method, path, body))
        if any([hook(request.method, path, body) for hook in list(self.on_request)]):
            return web.Response(status=503)
        response = await self._answer(request, path, body)
        odd = self._odd.get(self._route_name(request.method, path.strip("/").split("/")))
        if odd and response.status == 200 and isinstance(response, web.Response) and response.body:
            response = oddly(odd.popleft(), response)
        for hook in list(self.on_answered):
            hook(request.method, path)
        return response

    async def _answer(self, request: web.Request, path: str, body: Json) -> web.StreamResponse:
        parts = path.strip("/").split("/")
        route = self._route_name(request.method, parts)
        failure = self._failures.get(route)
        if failure:
            return failure_response(failure.popleft())
        webhook = parts[0] in ("webhooks", "interactions")
        if not webhook and request.headers.get("Authorization") != f"Bot {self.token}":
            return error_response(401, 0, "401: Unauthorized")
        handler = getattr(self, f"_r_{route}", None)
        if handler is None:
            return error_response(404, 0, f"404: Not Found ({request.method} {path})")
        return await handler(request, parts, body)

    @staticmethod
    def _route_name(method: str, parts: list[str]) -> str:
        head = parts[0]
        if head == "users":
            return "me"
        if head == "oauth2":
            return "application"
        if head == "applications":
            return "sync"
        if head == "interactions":
            return "callback"
        if head == "webhooks":
            if method == "POST":
                return "followup"
            return "original" if parts[-1] == "@original" else "webhook_message"
        if head == "channels":
            if len(parts) == 2:
                return "channel" if method == "GET" else "unknown"
            if parts[-1] == "typing":
                return "typing"
            if parts[-1] == "threads":
                return "thread"
            if len(parts) == 3:
                return "send" if method == "POST" else "history"
            return {"PATCH": "edit", "DELETE": "delete"}.get(method, "get_message")
        return "unknown"

    async def _r_me(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        return json_response(self.bot)

    async def _r_application(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        return json_response({"id": str(APP_ID), "name": "relay-bot", "description": "", "icon": None,
                              "bot_public": True, "bot_require_code_grant": False, "owner": user(1, "owner"),
                              "verify_key": "00", "flags": 0, "team": None, "summary": ""})

    async def _r_sync(self, request: web.Request, parts: list[str], body: Json | list[Json]) -> web.Response:
        where = parts[3] if len(parts) > 4 and parts[2] == "guilds" else "global"
        synced = [{**c, "id": str(self.snowflake()), "application_id": str(APP_ID), "version": "1",
                   "default_member_permissions": None, "type": c.get("type", 1)} for c in body]  # type: ignore[union-attr]
        self.commands[where] = synced
        return json_response(synced)

    def _channel(self, parts: list[str]) -> Channel | None:
        return self.channels.get(int(parts[1])) if parts[1].isdigit() else None

    async def _r_send(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        ch = self._channel(parts)
        if ch is None:
            return error_response(404, 10003, "Unknown Channel")
        if (bad := too_long(body.get("content"))) is not None:
            return bad
        ref = body.get("message_reference")
        if ref:
            ref = {k: str(v) if k.endswith("_id") else v for k, v in ref.items()}
        if ref and int(ref["message_id"]) not in ch.messages:
            if ref.get("fail_if_not_exists", True):
                return error_response(400, 50035, "Invalid Form Body", errors={"message_reference": {"_errors": [
                    {"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "message": "Unknown message"}]}})
            ref = None
        nonce = (ch.id, str(body.get("nonce"))) if body.get("enforce_nonce") and body.get("nonce") else None
        if nonce is not None and nonce in self._nonces and time.time() - self._nonces[nonce][1] < 300:
            return json_response(self._nonces[nonce][0])  # Discord: the same nonce within minutes, no new message
        files = []
        for fname, data in body.get("_uploads", []):
            key = f"{self.snowflake()}-{fname}"
            self.attachments[key] = data
            files.append({"id": key.split("-")[0], "filename": fname, "size": len(data),
                          "url": f"http://127.0.0.1:{self.port}/cdn/{key}",
                          "proxy_url": f"http://127.0.0.1:{self.port}/cdn/{key}"})
        msg = self._message(ch, self.bot, body.get("content") or "", components=body.get("components"),
                            reference=ref, attachments=files)
        if nonce is not None:
            self._nonces[nonce] = (msg, time.time())
        await self.dispatch("MESSAGE_CREATE", msg)
        return json_response(msg)

    def _find(self, parts: list[str]) -> tuple[Channel | None, Json | None]:
        ch = self._channel(parts)
        msg = ch.messages.get(int(parts[3])) if ch is not None and parts[3].isdigit() else None
        return ch, msg

    async def _r_edit(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        ch, msg = self._find(parts)
        if ch is None:
            return error_response(404, 10003, "Unknown Channel")
        if msg is None:
            return error_response(404, 10008, "Unknown Message")
        if (bad := too_long(body.get("content"))) is not None:
            return bad
        self._apply_edit(msg, body)
        await self.dispatch("MESSAGE_UPDATE", msg)  # as Discord does, for the bot's own edits too
        return json_response(msg)

    @staticmethod
    def _apply_edit(msg: Json, body: Json) -> None:
        if "content" in body:
            msg["content"] = body["content"] or ""
        if "components" in body:
            msg["components"] = body["components"] or []
        msg["flags"] &= ~LOADING
        msg["edited_timestamp"] = now()
        msg["_edits"] = msg.get("_edits", 0) + 1

    async def _r_delete(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        ch, msg = self._find(parts)
        if ch is None or msg is None:
            return error_response(404, 10008, "Unknown Message")
        del ch.messages[int(msg["id"])]
        await self.dispatch("MESSAGE_DELETE", self._deleted(ch, msg))
        return web.Response(status=204)

    async def delete(self, channel_id: int, message_id: int) -> None:
        """A person deletes a message of theirs (or a moderator does): MESSAGE_DELETE, with ids alone."""
        ch = self.channels[channel_id]
        await self.dispatch("MESSAGE_DELETE", self._deleted(ch, ch.messages.pop(message_id)))

    @staticmethod
    def _deleted(ch: Channel, msg: Json) -> Json:
        return {"id": msg["id"], "channel_id": str(ch.id), **({"guild_id": str(ch.guild_id)} if ch.guild_id else {})}

    async def _r_typing(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        if self._channel(parts) is None:
            return error_response(404, 10003, "Unknown Channel")
        return web.Response(status=204)

    async def _r_history(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        ch = self._channel(parts)
        if ch is None:
            return error_response(404, 10003, "Unknown Channel")
        after = int(request.query.get("after", "0"))
        limit = int(request.query.get("limit", "50"))
        found = sorted((m for i, m in ch.messages.items() if i > after), key=lambda m: int(m["id"]))[:limit]
        return json_response(list(reversed(found)))  # Discord returns newest first

    async def _r_channel(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        ch = self._channel(parts)
        if ch is None:
            return error_response(404, 10003, "Unknown Channel")
        return json_response(ch.payload())

    async def _r_thread(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        ch, msg = self._find(parts)
        if ch is None or msg is None:
            return error_response(404, 10008, "Unknown Message")
        if int(msg["id"]) in self.channels:
            return error_response(400, 160004, "A thread has already been created for this message")
        thread = Channel(int(msg["id"]), 11, ch.guild_id, parent_id=ch.id, name=body["name"], owner_id=BOT_ID)
        self.channels[thread.id] = thread
        await self.dispatch("THREAD_CREATE", {**thread.payload(), "newly_created": True})
        return json_response(thread.payload(), 201)
