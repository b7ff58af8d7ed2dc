"""A fake Slack: the Web API methods the relay calls, and the Socket Mode websocket, on 127.0.0.1.

The real slack-bolt / slack-sdk talk to it unmodified (``api_base_url`` points the Web API here;
``apps.connections.open`` hands out a ``ws://`` URL of this server). It keeps what a person in the
workspace would see (messages per thread, streams, ephemeral messages, reactions, the assistant
status) and can read a thread back as that person would (``transcript``).

Behaviour modelled on Slack's documented rules and errors:

* requests are merged from the query string, a form body and a JSON body (the SDK uses all three);
  ``Authorization: Bearer`` must carry the bot token (the app token for ``apps.connections.open``);
* ``chat.postMessage`` / ``chat.update``: ``markdown`` blocks over 12,000 characters in total ->
  ``msg_blocks_too_long``; ``text`` over 40,000 -> ``msg_too_long``; a malformed block ->
  ``invalid_blocks``; a channel the app was removed from -> ``not_in_channel`` (``removed``);
  ``table`` blocks: one a message, 1 to 100 rows, every row 1 to 20 cells and as wide as the others,
  cells ``raw_text`` with text or ``rich_text`` with elements, ``column_settings`` (20 at most) of
  ``align`` left/center/right and a boolean ``is_wrapped``; anything else -> ``invalid_blocks``
  (``table_blocks`` off: a Slack that takes no table block refuses every one so);
* native streams (``chat.startStream`` / ``appendStream`` / ``stopStream``): thread replies only,
  channels need ``recipient_user_id`` and ``recipient_team_id``; ``markdown_text`` over 12,000 ->
  ``msg_too_long``; a stream older than ``stream_expiry_s`` stops taking appends
  (``message_not_in_streaming_state``); a streaming message cannot be updated (``streaming`` off:
  ``not_allowed`` for every stream call);
* files (``files.getUploadURLExternal``, a POST of the bytes to the URL it hands out,
  ``files.completeUploadExternal``): the upload must be complete; the file is shared in the thread as a
  message carrying ``initial_comment`` (``files`` keeps every file);
* a person's file (``shared_file``): its ``url_private_download`` answers its bytes only to the bot
  token as a bearer token; without it (or without ``read_scope``: the app lacks ``files:read``) it
  answers Slack's sign-in page, HTML with status 200, as Slack does; ``files.info`` describes it
  (``missing_scope`` without ``read_scope``);
* ``conversations.replies`` (``slack_replies``): a thread read back by pages; ``history_scope`` off ->
  ``missing_scope``;
* ``fail_next(method, error, status=..., retry_after=...)`` queues one-shot failures (a 429 carries
  ``Retry-After``), checked before anything else; ``on_request`` hooks see each call as it arrives.

Socket Mode is in ``slack_socket`` (a mixin: envelopes, acks, redelivery, a dropped or silent
socket). HTTP mode: ``post_http`` signs and POSTs to the relay's ``/slack/events``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.slack_replies import replies_page
from tests.fakes.slack_socket import SocketMode
from tests.fakes.slack_tables import table_lines, valid_table

__all__ = ["APP_TOKEN", "BOT_ID", "BOT_TOKEN", "BOT_USER", "SIGNING_SECRET", "TEAM", "SlackFake", "SlackMessage"]

BOT_TOKEN = "xoxb-fake-bot-token"
APP_TOKEN = "xapp-fake-app-token"
SIGNING_SECRET = "fake-signing-secret"
TEAM = "T0FAKE"
BOT_USER = "U0BOT"
BOT_ID = "B0BOT"
MARKDOWN_LIMIT = 12_000
TEXT_LIMIT = 40_000
Params = dict[str, Any]


@dataclass
class SlackMessage:
    """One message as the workspace shows it."""

    channel: str
    ts: str
    user: str
    text: str = ""
    thread_ts: str | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    stream: str = ""  # "", "streaming", "stopped", "expired"
    started_at: float = 0.0
    edits: int = 0
    deleted: bool = False
    ephemeral_to: str | None = None
    reactions: set[str] = field(default_factory=set)
    files: list[str] = field(default_factory=list)  # ids of the files shared with it

    @property
    def shown(self) -> str:
        """The text a person reads: the markdown and table blocks in order (a table's row as its
        cells' texts between `` | ``), else the text."""
        shown = [b["text"] if b["type"] == "markdown" else table_lines(b)
                 for b in self.blocks if b.get("type") in ("markdown", "table")]
        return "\n\n".join(shown) if shown else self.text

    @property
    def plain(self) -> bool:
        """Sent as text only (no markdown or table block): Slack shows the text with its escapes undone."""
        return not any(b.get("type") in ("markdown", "table") for b in self.blocks)

    @property
    def buttons(self) -> list[dict[str, Any]]:
        """The button elements of the message's actions blocks."""
        return [e for b in self.blocks if b.get("type") == "actions" for e in b.get("elements", [])]


class _Failure(Exception):
    def __init__(self, error: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        super().__init__(error)
        self.error, self.status, self.headers = error, status, headers or {}


class SlackFake(SocketMode):
    """``async with SlackFake() as slack:``; ``slack.api_url`` is the Web API base."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Params]] = []
        #: Called with each Web API call as it arrives, before it is answered (a hook may kill the client).
        self.on_request: list[Callable[[str, Params], None]] = []
        self.messages: list[SlackMessage] = []
        self._by_ts: dict[str, SlackMessage] = {}  # every ts is unique: finding a message costs nothing
        self.statuses: list[tuple[str, str, str]] = []  # (channel, thread_ts, status)
        self.files: dict[str, dict[str, Any]] = {}  # file id -> name, length, data, shared in (channel, thread)
        self.removed: set[str] = set()
        self.streaming = True
        self.table_blocks = True
        self.assistant_status = True
        self.history_scope = True  # off: conversations.replies is refused (missing_scope)
        self.read_scope = True  # off: a person's file downloads as the sign-in page (no files:read)
        self.downloads: list[str | None] = []  # each download of a person's file: the Authorization it came with
        self.download_delay_s = 0.0
        self.stream_expiry_s = 300.0
        self.http_target: str | None = None
        #: An app that reads a channel hears of its own messages there, as of anyone's (slack-bolt drops
        #: them in its ``IgnoringSelfEvents`` middleware for that reason): a ``message`` event for each post
        #: (``chat.postMessage``, ``chat.startStream``), a ``message_changed`` for each ``chat.update``
        #: (docs.slack.dev: "sent when a message in a channel is edited using the chat.update API method"),
        #: and for a stream's appends and its stop (a ``bot_message`` with its ``streaming_state`` inside:
        #: node-slack-sdk#2371; how many Slack sends for a stream is not documented: one a call here, the
        #: most it could be). Off: none comes back.
        self.echo_updates = True
        self.echoed: list[str] = []  # each such event delivered: its envelope id (socket) or the HTTP status
        self._echoes: set[asyncio.Task[Any]] = set()
        self._failures: dict[str, list[_Failure]] = {}
        self._odd: dict[str, list[str]] = {}  # method -> how its next answers are made odd
        self._last_us = 0  # the last ts handed out, in microseconds
        self._runner: web.AppRunner | None = None
        self.port = 0
        SocketMode.__init__(self)

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> SlackFake:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/files-pri/{file_id}/download/{name}", self._download)
        app.router.add_get("/link/", self._socket)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for conn in self._conns:
            conn.done.set()
        assert self._runner is not None
        await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        """The Web API base, in the ``https://slack.com/api/`` form."""
        return f"http://127.0.0.1:{self.port}/api/"

    def fail_next(self, method: str, error: str, *, status: int = 200, retry_after: int | None = None,
                  times: int = 1) -> None:
        """The next ``times`` calls of ``method`` fail with ``error`` (a 429 says ``Retry-After``)."""
        headers = {"Retry-After": str(int(retry_after))} if retry_after is not None else {}
        self._failures.setdefault(method, []).extend(_Failure(error, status, headers) for _ in range(times))

    def next_ts(self) -> str:
        """A fresh message timestamp (the time now, as Slack's are), later than every earlier one."""
        self._last_us = max(int(time.time() * 1_000_000), self._last_us + 1)
        return f"{self._last_us // 1_000_000}.{self._last_us % 1_000_000:06d}"

    # -- the Web API -----------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: Params = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(dict(await request.post()))
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or str(params.get("token", ""))
        self.calls.append((method, params))
        for hook in list(self.on_request):
            hook(method, params)
        try:
            if queued := self._failures.get(method):
                raise queued.pop(0)
            wanted = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
            if token != wanted:
                raise _Failure("invalid_auth")
            handler = getattr(self, "_m_" + method.replace(".", "_"), None)
            if handler is None:
                raise _Failure("unknown_method")
            result: Params = handler(params)
        except _Failure as failure:
            body = json.dumps({"ok": False, "error": failure.error})
            return web.Response(status=failure.status, body=body, headers={**failure.headers,
                                                                          "Content-Type": "application/json"})
        if odd := self._odd.get(method):
            how = odd.pop(0)
            if how == "not json":
                return web.Response(text="<html>ok</html>", content_type="text/html")
            result = {k: v for k, v in result.items() if k not in ("ts", "message_ts")}  # "no ts"
        return web.json_response({"ok": True, **result})

    def answer_oddly(self, method: str, how: str = "no ts", *, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` are carried out and answered oddly: "no ts" (``ok``
        without the message's ``ts``/``message_ts``) or "not json"."""
        self._odd.setdefault(method, []).extend([how] * times)

    def _m_auth_test(self, p: Params) -> Params:
        return {"url": "https://fake.slack.com/", "team": "Fake", "user": "relay", "team_id": TEAM,
                "user_id": BOT_USER, "bot_id": BOT_ID, "is_enterprise_install": False}

    def _m_apps_connections_open(self, p: Params) -> Params:
        return {"url": f"ws://127.0.0.1:{self.port}/link/?ticket={next(self._envelopes)}"}

    def _channel(self, p: Params, key: str = "channel") -> str:
        channel = str(p.get(key) or "")
        if not channel:
            raise _Failure("channel_not_found")
        if channel in self.removed:
            raise _Failure("not_in_channel")
        return channel

    def _check_content(self, p: Params) -> tuple[str, list[dict[str, Any]]]:
        text = str(p.get("text") or "")
        blocks = p.get("blocks") or []
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        if not text and not blocks:
            raise _Failure("no_text")
        if len(text) > TEXT_LIMIT:
            raise _Failure("msg_too_long")
        for block in blocks:
            kind = block.get("type")
            if kind == "markdown" and not isinstance(block.get("text"), str):
                raise _Failure("invalid_blocks")
            if kind == "actions":
                for e in block.get("elements", []):
                    if e.get("type") != "button" or not 0 < len(e["text"]["text"]) <= 75 or len(e["value"]) > 2000:
                        raise _Failure("invalid_blocks")
            elif kind == "table":
                if not self.table_blocks or not valid_table(block):
                    raise _Failure("invalid_blocks")
            elif kind != "markdown":
                raise _Failure("invalid_blocks")
        if sum(b.get("type") == "table" for b in blocks) > 1:
            raise _Failure("invalid_blocks")
        if sum(len(b["text"]) for b in blocks if b["type"] == "markdown") > MARKDOWN_LIMIT:
            raise _Failure("msg_blocks_too_long")
        return text, blocks

    def _m_chat_postMessage(self, p: Params) -> Params:
        channel = self._channel(p)
        text, blocks = self._check_content(p)
        msg = SlackMessage(channel, self.next_ts(), BOT_USER, text, p.get("thread_ts"), blocks)
        self._keep(msg)
        self._echo(msg)
        return {"channel": channel, "ts": msg.ts, "message": {"text": text, "ts": msg.ts}}

    def _m_conversations_replies(self, p: Params) -> Params:
        self._channel(p)
        if not self.history_scope:
            raise _Failure("missing_scope")
        try:
            return replies_page(self.messages, p, bot_user=BOT_USER, bot_id=BOT_ID)
        except ValueError as exc:
            raise _Failure(str(exc)) from None

    def _m_chat_postEphemeral(self, p: Params) -> Params:
        channel = self._channel(p)
        text, blocks = self._check_content(p)
        msg = SlackMessage(channel, self.next_ts(), BOT_USER, text, p.get("thread_ts"), blocks,
                           ephemeral_to=str(p["user"]))
        self._keep(msg)
        return {"message_ts": msg.ts}

    def _keep(self, msg: SlackMessage) -> None:
        self.messages.append(msg)
        self._by_ts[msg.ts] = msg

    def find(self, channel: str, ts: str) -> SlackMessage:
        """The message ``ts`` in ``channel`` (``message_not_found`` otherwise)."""
        msg = self._by_ts.get(ts)
        if msg is not None and msg.channel == channel and not msg.deleted and msg.ephemeral_to is None:
            return msg
        raise _Failure("message_not_found")

    def get(self, channel: str, ts: str) -> SlackMessage | None:
        """The message ``ts`` in ``channel`` as it stands (ephemeral ones too); None once deleted."""
        msg = self._by_ts.get(ts)
        return None if msg is None or msg.channel != channel or msg.deleted else msg

    def _mine(self, p: Params) -> SlackMessage:
        msg = self.find(self._channel(p), str(p.get("ts")))
        if msg.user != BOT_USER:
            raise _Failure("cant_update_message")
        return msg

    def _m_chat_update(self, p: Params) -> Params:
        msg = self._mine(p)
        self._expire(msg)
        if msg.stream == "streaming":
            raise _Failure("message_is_streaming")
        before = msg.text
        msg.text, msg.blocks = self._check_content(p)
        msg.edits += 1
        self._echo(msg, before=before)
        return {"channel": msg.channel, "ts": msg.ts, "text": msg.text}

    def _echo(self, msg: SlackMessage, *, before: str | None = None, streaming: str | None = None) -> None:
        """The event of the app's own post (``before`` None) or change of ``msg``, sent as Slack sends one
        (``echo_updates``): over the socket, or posted to the relay's HTTP endpoint."""
        if not self.echo_updates:
            return
        thread = {"thread_ts": msg.thread_ts} if msg.thread_ts else {}
        kind = "im" if msg.channel.startswith("D") else "channel"
        own = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "app_id": "A0FAKE", "team": TEAM, "ts": msg.ts,
               **thread, **({"subtype": "bot_message", "streaming_state": streaming} if streaming else {})}
        if before is None:
            event = {**own, "text": msg.text, "channel": msg.channel, "channel_type": kind, "event_ts": msg.ts}
        else:
            edit_ts = self.next_ts()
            event = {"type": "message", "subtype": "message_changed", "hidden": True, "channel": msg.channel,
                     "channel_type": kind, "ts": edit_ts, "event_ts": edit_ts,
                     "message": {**own, "text": msg.text, "edited": {"user": BOT_USER, "ts": edit_ts}},
                     "previous_message": {**own, "text": before}}
        if self._open() or self.http_target is not None:
            task = asyncio.get_running_loop().create_task(self._send_echo(self.event_envelope(event)))
            self._echoes.add(task)
            task.add_done_callback(self._echoes.discard)

    async def _send_echo(self, envelope: dict[str, Any]) -> None:
        try:
            if self._open():
                self.echoed.append(await self.send_envelope(envelope))
            elif self.http_target is not None:
                body = json.dumps(envelope).encode()
                status, _ = await self.post_http(body, self.signed_headers(body))
                self.echoed.append(str(status))
        except (aiohttp.ClientError, ConnectionError, RuntimeError):
            pass  # the relay is gone (stopped, or killed by the test): Slack would drop it too

    def _m_chat_delete(self, p: Params) -> Params:
        msg = self._mine(p)
        msg.deleted = True
        return {"channel": msg.channel, "ts": msg.ts}

    # -- files (files.getUploadURLExternal, the upload, files.completeUploadExternal) -------------

    def _m_files_getUploadURLExternal(self, p: Params) -> Params:
        if not p.get("filename") or not str(p.get("length", "")).isdigit():
            raise _Failure("invalid_arguments")
        file_id = f"F{len(self.files) + 1:08d}"
        self.files[file_id] = {"name": str(p["filename"]), "length": int(p["length"]), "data": None}
        return {"upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}", "file_id": file_id}

    async def _upload(self, request: web.Request) -> web.Response:
        found = self.files.get(request.match_info["file_id"])
        if found is None:
            return web.Response(status=404)
        found["data"] = await request.read()
        return web.Response(text=f"OK - {len(found['data'])}")

    def shared_file(self, name: str, mime: str, data: bytes) -> dict[str, Any]:
        """A file a person shares: the file object an event carries (its URL is this server's)."""
        file_id = f"F{len(self.files) + 1:08d}"
        self.files[file_id] = {"name": name, "length": len(data), "data": data}
        url = f"http://127.0.0.1:{self.port}/files-pri/{TEAM}-{file_id}/download/{name}"
        shared = {"id": file_id, "name": name, "title": name, "mimetype": mime, "filetype": name.rsplit(".", 1)[-1],
                  "size": len(data), "url_private": url.replace("/download/", "/"), "url_private_download": url}
        self.files[file_id]["shared"] = shared
        return shared

    def _m_files_info(self, p: Params) -> Params:
        if not self.read_scope:
            raise _Failure("missing_scope")
        found = self.files.get(str(p.get("file")))
        if found is None or "shared" not in found:
            raise _Failure("file_not_found")
        return {"file": found["shared"]}

    async def _download(self, request: web.Request) -> web.Response:
        given = request.headers.get("Authorization")
        self.downloads.append(given)
        await asyncio.sleep(self.download_delay_s)
        found = self.files.get(request.match_info["file_id"].removeprefix(f"{TEAM}-"))
        if given != f"Bearer {BOT_TOKEN}" or not self.read_scope:
            return web.Response(text="<!DOCTYPE html><html><body>Sign in to Slack</body></html>",
                                content_type="text/html")
        if found is None or found["data"] is None:
            return web.Response(status=404)
        return web.Response(body=found["data"], content_type="application/octet-stream")

    def _m_files_completeUploadExternal(self, p: Params) -> Params:
        files = p.get("files")
        listed = json.loads(files) if isinstance(files, str) else files or []
        channel = self._channel(p, "channel_id")
        done = []
        for item in listed:
            found = self.files.get(str(item.get("id")))
            if found is None or found["data"] is None or len(found["data"]) != found["length"]:
                raise _Failure("file_upload_incomplete" if found else "file_not_found")
            found["shared"] = (channel, p.get("thread_ts"))
            done.append({"id": item["id"], "name": found["name"], "title": item.get("title") or found["name"]})
        msg = SlackMessage(channel, self.next_ts(), BOT_USER, str(p.get("initial_comment") or ""), p.get("thread_ts"))
        msg.files = [d["id"] for d in done]
        self._keep(msg)
        return {"files": done}

    # -- native streams ----------------------------------------------------------------------

    def _expire(self, msg: SlackMessage) -> None:
        if msg.stream == "streaming" and time.monotonic() - msg.started_at > self.stream_expiry_s:
            msg.stream = "expired"

    def expire_streams(self) -> None:
        """Every open stream ends now, as Slack ends one after about five minutes."""
        for msg in self.messages:
            if msg.stream == "streaming":
                msg.stream = "expired"

    def _stream_text(self, p: Params) -> str:
        text = str(p.get("markdown_text") or "")
        for chunk in p.get("chunks") or []:
            if chunk.get("type") == "markdown_text":
                text += chunk.get("text", "")
        if len(text) > MARKDOWN_LIMIT:
            raise _Failure("msg_too_long")
        return text

    def _m_chat_startStream(self, p: Params) -> Params:
        channel = self._channel(p)
        if not self.streaming:
            raise _Failure("not_allowed")
        if not p.get("thread_ts"):
            raise _Failure("invalid_arguments")
        if not channel.startswith("D") and not (p.get("recipient_user_id") and p.get("recipient_team_id")):
            raise _Failure("invalid_arguments")
        msg = SlackMessage(channel, self.next_ts(), BOT_USER, self._stream_text(p), str(p["thread_ts"]),
                           stream="streaming", started_at=time.monotonic())
        self._keep(msg)
        self._echo(msg, streaming="in_progress")
        return {"channel": channel, "ts": msg.ts}

    def _streaming(self, p: Params) -> SlackMessage:
        if not self.streaming:
            raise _Failure("not_allowed")
        msg = self._mine(p)
        self._expire(msg)
        if msg.stream != "streaming":
            raise _Failure("message_not_in_streaming_state")
        return msg

    def _m_chat_appendStream(self, p: Params) -> Params:
        msg = self._streaming(p)
        before = msg.text
        msg.text += self._stream_text(p)
        msg.edits += 1
        self._echo(msg, before=before, streaming="in_progress")
        return {"channel": msg.channel, "ts": msg.ts}

    def _m_chat_stopStream(self, p: Params) -> Params:
        msg = self._streaming(p)
        before = msg.text
        msg.text += self._stream_text(p)
        msg.stream = "stopped"
        self._echo(msg, before=before, streaming="completed")
        return {"channel": msg.channel, "ts": msg.ts, "message": {"text": msg.text}}

    # -- indicators --------------------------------------------------------------------------

    def _m_assistant_threads_setStatus(self, p: Params) -> Params:
        if not self.assistant_status:
            raise _Failure("not_allowed")
        self.statuses.append((self._channel(p, "channel_id"), str(p["thread_ts"]), str(p.get("status", ""))))
        return {}

    def _m_reactions_add(self, p: Params) -> Params:
        msg = self._any(p)
        if p["name"] in msg.reactions:
            raise _Failure("already_reacted")
        msg.reactions.add(str(p["name"]))
        return {}

    def _m_reactions_remove(self, p: Params) -> Params:
        msg = self._any(p)
        if p["name"] not in msg.reactions:
            raise _Failure("no_reaction")
        msg.reactions.discard(str(p["name"]))
        return {}

    def _any(self, p: Params) -> SlackMessage:
        return self.find(self._channel(p), str(p.get("timestamp")))

    def status_of(self, channel: str, thread_ts: str) -> str:
        """The assistant status a thread shows now ("" once cleared)."""
        shown = [s for c, t, s in self.statuses if (c, t) == (channel, thread_ts)]
        return shown[-1] if shown else ""

    # -- what people write -------------------------------------------------------------------

    def user_message(self, user: str, channel: str, text: str, thread_ts: str | None = None) -> SlackMessage:
        """Record a person's message (it is in the channel whether or not the relay hears of it)."""
        msg = SlackMessage(channel, self.next_ts(), user, text, thread_ts)
        self._keep(msg)
        return msg

    def event_envelope(self, event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
        """The Events API body Slack wraps an event in."""
        return {"token": "legacy", "team_id": TEAM, "api_app_id": "A0FAKE", "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._envelopes):06d}", "event_time": int(time.time()),
                "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True,
                                    "enterprise_id": None, "is_enterprise_install": False}],
                "event": event}

    def thread(self, channel: str, thread_ts: str) -> list[SlackMessage]:
        """The thread's messages in order (the parent first), ephemeral ones included."""
        return [m for m in self.messages if m.channel == channel and not m.deleted
                and (m.ts == thread_ts or m.thread_ts == thread_ts)]

    def bot_messages(self, channel: str, thread_ts: str) -> list[SlackMessage]:
        """What the app posted in the thread that everyone sees."""
        return [m for m in self.thread(channel, thread_ts) if m.user == BOT_USER and m.ephemeral_to is None]

    def ephemerals(self, user: str) -> list[SlackMessage]:
        """Messages only ``user`` saw."""
        return [m for m in self.messages if m.ephemeral_to == user]

    def transcript(self, channel: str, thread_ts: str) -> str:
        """The thread as a person in it reads it: who wrote what, buttons, streams, reactions."""
        lines = []
        for m in self.thread(channel, thread_ts):
            who = "relay" if m.user == BOT_USER else m.user
            if m.ephemeral_to:
                who += f" (only {m.ephemeral_to} sees this)"
            extra = ["[still streaming]"] if m.stream == "streaming" else []
            extra += [f"[button {b['text']['text']}]" for b in m.buttons]
            extra += [f":{r}:" for r in sorted(m.reactions)]
            lines.append(f"--- {who} {m.ts} {' '.join(extra)}".rstrip())
            lines.append(m.shown)
        if status := self.status_of(channel, thread_ts):
            lines.append(f"--- (status: relay {status})")
        return "\n".join(lines)

    # -- HTTP mode ---------------------------------------------------------------------------

    def signed_headers(self, body: bytes, *, secret: str = SIGNING_SECRET, timestamp: str | None = None,
                       content_type: str = "application/json") -> dict[str, str]:
        """Headers Slack sends with ``body``: a timestamp and its HMAC signature."""
        ts = str(int(time.time())) if timestamp is None else timestamp
        digest = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
        return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}",
                "Content-Type": content_type}

    async def post_http(self, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        """POST ``body`` to the relay's ``/slack/events``; returns (status, response text)."""
        assert self.http_target is not None
        async with aiohttp.ClientSession() as session, session.post(self.http_target, data=body,
                                                                   headers=headers) as resp:
            return resp.status, await resp.text()

    @staticmethod
    def form(fields: Iterable[tuple[str, str]]) -> bytes:
        """A form-urlencoded body (slash commands, and interactivity as ``payload=<json>``)."""
        return urllib.parse.urlencode(list(fields)).encode()
