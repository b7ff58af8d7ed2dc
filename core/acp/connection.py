"""NDJSON JSON-RPC 2.0 over an agent's stdio: our own reader and writer.

Why not the ``agent-client-protocol`` SDK's transport: its receive loop dies on a JSON value that
is not an object, it has no per-request budget, and no line cap (see docs/acp-facts.md). Here a bad
line costs one counter increment, never the connection.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from core.acp.session_handle import AcpRequestTimeout, AcpRuntimeDead

__all__ = ["DEFAULT_LINE_CAP", "JsonRpcConnection", "ReaderStats", "Reply", "RpcError"]

log = logging.getLogger("acp_relay.acp.wire")

DEFAULT_LINE_CAP = 16 * 1024 * 1024
_CHUNK = 256 * 1024
#: One encoder for every frame written (``json.dumps`` with separators makes a new one per call).
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
#: What ``json.loads`` decodes a text with (it is called for every frame read: no keyword checks).
_DECODE = json.JSONDecoder().decode

Handler = Callable[[str, Any], Awaitable[Any]]
NotificationHandler = Callable[[str, Any], None]


class RpcError(Exception):
    """A JSON-RPC error object, as received or to be sent."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        """The ``error`` member of a JSON-RPC response (``data`` only when set)."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


@dataclass(slots=True)
class Reply:
    """A request handler's answer plus an event set once that answer has been written."""

    result: Any
    sent: asyncio.Event


@dataclass(slots=True)
class ReaderStats:
    """What the reader saw and skipped: a bad line costs one increment here, never the connection."""

    frames: int = 0
    non_json: int = 0
    non_object: int = 0
    oversized: int = 0
    bad_frames: int = 0  # well-formed JSON-RPC whose params did not have the expected shape


class _Pending:
    __slots__ = ("future", "idle_key", "last_activity", "method", "timer")

    def __init__(self, method: str, future: asyncio.Future[Any], idle_key: str | None) -> None:
        self.method = method
        self.future = future
        self.idle_key = idle_key  # the sessionId whose frames restart this request's budget
        self.last_activity = 0.0
        self.timer: asyncio.TimerHandle | None = None  # fails the future once its budget is spent


class JsonRpcConnection:
    """One JSON-RPC peer. ``run()`` reads until EOF; requests wait on their own budgets.

    ``on_notification`` is called synchronously, in arrival order, so chunks keep their order.
    ``on_request`` answers agent->client requests; an RpcError it raises becomes the error reply.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        on_notification: NotificationHandler,
        on_request: Handler,
        line_cap: int = DEFAULT_LINE_CAP,
        on_frame_sent: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_notification = on_notification
        self._on_request = on_request
        self._line_cap = line_cap
        self._on_frame_sent = on_frame_sent
        self._ids = itertools.count()
        self._pending: dict[int, _Pending] = {}
        self._idle_pending: set[_Pending] = set()  # budgets that restart whenever a frame arrives
        self._request_tasks: set[asyncio.Task[None]] = set()
        self._closed_error: AcpRuntimeDead | None = None
        self.stats = ReaderStats()

    # -- reading ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Read frames until EOF. The owner then calls ``close()`` with the reason (exit code...)."""
        partial: list[bytes] = []  # pieces of a line whose newline has not arrived yet
        partial_len = 0
        dropping = False  # inside an oversized line: discard until its newline
        try:
            while chunk := await self._reader.read(_CHUNK):
                nl = chunk.find(b"\n")
                if nl < 0:
                    if not dropping:
                        partial.append(chunk)
                        partial_len += len(chunk)
                        if partial_len > self._line_cap:
                            self._report_oversized(partial_len)
                            partial, partial_len, dropping = [], 0, True
                    continue
                if dropping:
                    dropping = False
                elif partial:
                    partial.append(chunk[:nl])
                    self._feed(b"".join(partial))
                else:
                    self._feed(chunk[:nl])
                partial, partial_len = [], 0
                lines = chunk[nl + 1:].split(b"\n")
                tail = lines.pop()
                for line in lines:
                    self._feed(line)
                if tail:
                    partial, partial_len = [tail], len(tail)
            if partial and not dropping:
                self._feed(b"".join(partial))
        except (ConnectionError, OSError) as exc:
            log.warning("reading from the agent failed: %s", exc)

    def _report_oversized(self, size: int) -> None:
        self.stats.oversized += 1
        log.warning("agent wrote a line over %d bytes (%d so far); dropped it", self._line_cap, size)

    def _feed(self, line: bytes) -> None:
        if len(line) > self._line_cap:
            self._report_oversized(len(line))
            return
        stripped = line.strip()
        if not stripped:
            return
        if stripped[:1] != b"{":
            self._skip_non_json(stripped)
            return
        try:
            # UTF-8 decoded here, as ``json.loads`` would for a line starting "{" and no NUL (no UTF-16
            # or -32): its look for the encoding costs more than the rest of a short frame's decoding.
            if stripped[1:2] == b"\0":
                frame = json.loads(stripped)
            else:
                frame = _DECODE(stripped.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            self._skip_non_json(stripped)
            return
        if not isinstance(frame, dict) or frame.get("jsonrpc") != "2.0":
            self.stats.non_object += 1
            log.debug("skipped a JSON value that is not a JSON-RPC object")
            return
        self.stats.frames += 1
        self._dispatch(frame)

    def _skip_non_json(self, line: bytes) -> None:
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            self.stats.non_json += 1
            log.debug("skipped non-JSON output: %.120r", line)
        else:
            self.stats.non_object += 1
            log.debug("skipped a JSON value that is not an object")

    def _dispatch(self, frame: dict[str, Any]) -> None:
        method = frame.get("method")
        if isinstance(method, str):
            if "id" in frame:
                task = asyncio.create_task(self._answer(frame["id"], method, frame.get("params")),
                                           name=f"acp-answer-{method}")
                self._request_tasks.add(task)
                task.add_done_callback(self._request_tasks.discard)
            else:
                if self._idle_pending:
                    params = frame.get("params")
                    sid = params.get("sessionId") if isinstance(params, dict) else None
                    now = asyncio.get_running_loop().time()
                    for idle in self._idle_pending:
                        if idle.idle_key == sid:
                            idle.last_activity = now
                try:
                    self._on_notification(method, frame.get("params"))
                except Exception:  # one malformed frame costs that frame, never the connection
                    self.stats.bad_frames += 1
                    if self.stats.bad_frames == 1:
                        log.warning("skipped a %s frame this relay could not read", method, exc_info=True)
                    else:
                        log.debug("skipped a %s frame this relay could not read", method)
            return
        rid = frame.get("id")
        pending = self._pending.pop(rid, None) if isinstance(rid, int) else None
        if pending is None:
            log.debug("response for an unknown request id %r", frame.get("id"))
            return
        if pending.future.done():
            return
        error = frame.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            pending.future.set_exception(RpcError(
                code if isinstance(code, int) else -32603, str(error.get("message", "")), error.get("data")))
        else:
            pending.future.set_result(frame.get("result"))

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        try:
            result = await self._on_request(method, params)
        except RpcError as exc:
            self._send({"jsonrpc": "2.0", "id": request_id, "error": exc.to_dict()})
        except Exception:  # a failing handler must still answer, or the agent waits forever
            log.exception("answering the agent's %s request failed", method)
            self._send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": "Internal error"}})
        else:
            reply = result if isinstance(result, Reply) else None
            self._send({"jsonrpc": "2.0", "id": request_id, "result": reply.result if reply else result})
            if reply is not None:
                reply.sent.set()

    # -- writing ---------------------------------------------------------------------------

    def _send(self, frame: dict[str, Any]) -> None:
        if self._closed_error is not None:
            return
        if self._on_frame_sent is not None:
            self._on_frame_sent(frame)
        self._writer.write(_ENCODE(frame).encode() + b"\n")

    def notify(self, method: str, params: Any) -> None:
        """Send a notification (no id, no answer); dropped silently once the connection is closed."""
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def next_id(self) -> int:
        """A fresh request id; ``request()`` takes one when the caller did not pass its own."""
        return next(self._ids)

    def send_request(self, method: str, params: Any) -> tuple[int, asyncio.Future[Any]]:
        """Send a request now, without a budget, and return its id and the future of its answer (an
        RpcError, or the connection's death, as its exception). For a caller that waits on the answer
        together with other things and without a task of its own (a prompt turn): it bounds the wait
        itself, calls ``drained`` once, and ``forget`` once it no longer waits."""
        rid = next(self._ids)
        return rid, self._start(rid, method, params, None).future  # (its answer is read after this returns)

    def _start(self, rid: int, method: str, params: Any, idle_key: str | None) -> _Pending:
        """Write the request's frame, then wait for its answer (a frame that could not be written is not)."""
        if self._closed_error is not None:
            raise self._closed_error
        pending = _Pending(method, asyncio.get_running_loop().create_future(), idle_key)
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        self._pending[rid] = pending
        return pending

    async def drained(self, future: asyncio.Future[Any]) -> None:
        """Wait until the agent's stdin takes more; a write that failed fails ``future`` (the answer
        of the request just sent) with AcpRuntimeDead."""
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            if not future.done():
                future.set_exception(AcpRuntimeDead(f"could not write to the agent: {exc}"))

    def forget(self, request_id: int) -> None:
        """No one waits for the answer to ``request_id`` any more (a late one is logged and dropped)."""
        self._pending.pop(request_id, None)

    async def request(
        self, method: str, params: Any, *, timeout_s: float, request_id: int | None = None,
        idle_key: str | None = None,
    ) -> Any:
        """Send a request and wait for its response within ``timeout_s``.

        With ``idle_key`` the budget restarts whenever a notification for that sessionId arrives
        (session/load replays history before answering; other sessions' frames do not count).
        ``timeout_s <= 0`` means no budget (prompt turns have their own, enforced by the caller).
        """
        loop = asyncio.get_running_loop()
        rid = self.next_id() if request_id is None else request_id
        pending = self._start(rid, method, params, idle_key)
        pending.last_activity = loop.time()
        if idle_key is not None:
            self._idle_pending.add(pending)
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._pending.pop(rid, None)
            self._idle_pending.discard(pending)
            raise AcpRuntimeDead(f"could not write to the agent: {exc}") from exc
        try:
            if timeout_s > 0:  # a timer, not asyncio.wait: no waiter future and callbacks per request
                pending.timer = loop.call_at(pending.last_activity + timeout_s, self._expire, pending, timeout_s)
            return await pending.future
        finally:
            if pending.timer is not None:
                pending.timer.cancel()
            self._pending.pop(rid, None)
            self._idle_pending.discard(pending)

    @staticmethod
    def _expire(pending: _Pending, timeout_s: float) -> None:
        """The budget of ``pending`` is spent, unless its session's frames restarted it (``idle_key``)."""
        if pending.future.done():
            return
        loop = pending.future.get_loop()
        deadline = pending.last_activity + timeout_s
        if pending.idle_key is not None and deadline > loop.time():
            pending.timer = loop.call_at(deadline, JsonRpcConnection._expire, pending, timeout_s)
            return
        method = pending.method
        pending.future.set_exception(AcpRequestTimeout(
            f"{method} got no answer within {timeout_s:g}s", method=method, budget_s=timeout_s))

    def close(self, error: AcpRuntimeDead) -> None:
        """Fail every pending request; later requests raise ``error`` at once."""
        if self._closed_error is None:
            self._closed_error = error
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(self._closed_error)
        self._pending.clear()
        for task in self._request_tasks:
            task.cancel()

    @property
    def pending(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._pending)

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran: requests fail at once and nothing more is written."""
        return self._closed_error is not None
