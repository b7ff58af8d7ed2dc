"""The fake Slack's Socket Mode side: the websocket, envelopes and their acknowledgements.

A mixin of ``SlackFake`` (``slack_api``): ``push`` sends an envelope and waits for its ack
(``send_envelope`` does not wait); an envelope not acknowledged is sent again on the next
connection, as Slack retries an event; ``on_ack`` hooks see each ack as it arrives. ``disconnect``
sends Slack's ``disconnect`` message (``refresh_requested``), ``kill_socket`` drops the connection,
``go_silent`` keeps it open but stops reading (a "connected but deaf" socket).

Several apps (relays) may hold a connection each: Slack spreads the envelopes over them, so
``send_envelope`` takes the open connections in turn (``disconnect``, ``kill_socket`` and
``go_silent`` act on the newest).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

__all__ = ["SocketMode"]


@dataclass
class _Conn:
    ws: web.WebSocketResponse
    request: web.Request
    reader: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


class SocketMode:
    """Socket Mode state and its routes; ``SlackFake`` serves ``/link/`` with ``_socket``."""

    def __init__(self) -> None:
        self.acks: dict[str, Any] = {}
        self.connections = 0
        self.closed_by_client = 0  # Socket Mode connections the app closed itself (a clean stop)
        self._envelopes = itertools.count(1)
        self._conn: _Conn | None = None
        self._conns: list[_Conn] = []
        self._turn = -1  # the connection the last envelope went over
        self._ack_waiters: dict[str, asyncio.Future[Any]] = {}
        #: Envelopes sent and not acknowledged: Slack sends each again on the next connection.
        self._unacked: dict[str, tuple[str, dict[str, Any], int]] = {}  # envelope id -> (kind, payload, attempt)
        #: Called with each envelope id as its acknowledgement arrives (a hook may kill the app then).
        self.on_ack: list[Callable[[str], None]] = []
        self._connected = asyncio.Condition()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        conn = _Conn(ws, request)
        self._conn = conn
        self._conns.append(conn)
        await ws.send_json({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0FAKE"},
                            "debug_info": {"host": "fake", "approximate_connection_time": 3600}})
        conn.reader = asyncio.create_task(self._read(conn))
        await self._redeliver()
        async with self._connected:
            self.connections += 1
            self._connected.notify_all()
        await conn.done.wait()
        conn.reader.cancel()
        if not ws.closed:
            await ws.close()
        return ws

    async def _read(self, conn: _Conn) -> None:
        async for msg in conn.ws:  # reading also answers the SDK's pings (autoping)
            if msg.type == aiohttp.WSMsgType.TEXT:
                data = json.loads(msg.data)
                eid = data.get("envelope_id")
                self.acks[eid] = data.get("payload")
                self._unacked.pop(eid, None)
                for hook in list(self.on_ack):
                    hook(eid)
                if (waiter := self._ack_waiters.pop(eid, None)) is not None and not waiter.done():
                    waiter.set_result(data.get("payload"))
        if not conn.done.is_set():  # (kill_socket sets it first: that is the server's doing)
            self.closed_by_client += 1
        conn.done.set()  # the client closed it (a cancelled reader is a silent socket: not done)

    def _open(self) -> list[_Conn]:
        return [c for c in self._conns if not c.ws.closed and not c.done.is_set()
                and c.reader is not None and not c.reader.done()]

    def _next_conn(self) -> _Conn | None:
        """The open connections in turn (a silent one, no longer read, is passed over)."""
        found = self._open()
        if not found:
            return None
        self._turn = (self._turn + 1) % len(found)
        return found[self._turn]

    @property
    def connected(self) -> bool:
        """A Socket Mode connection is open now."""
        return bool(self._open())

    async def wait_connected(self, count: int = 1, timeout: float = 15.0) -> None:
        """Wait until ``count`` Socket Mode connections have been opened in all."""
        async with asyncio.timeout(timeout), self._connected:
            await self._connected.wait_for(lambda: self.connections >= count)

    async def push(self, payload: dict[str, Any], kind: str = "events_api", *, retry_attempt: int = 0,
                   timeout: float = 15.0) -> Any:
        """Send an envelope over the current socket; returns the ack's payload (None when empty)."""
        eid = await self.send_envelope(payload, kind, retry_attempt=retry_attempt)
        waiter = self._ack_waiters.setdefault(eid, asyncio.get_running_loop().create_future())
        if eid in self.acks:
            return self.acks[eid]
        async with asyncio.timeout(timeout):
            return await waiter

    async def send_envelope(self, payload: dict[str, Any], kind: str = "events_api", *,
                            retry_attempt: int = 0) -> str:
        """Send an envelope without waiting for its ack; returns its id. Until it is acknowledged,
        every new connection gets it again (``retry_attempt`` counting up), as Slack does."""
        conn = self._next_conn()
        assert conn is not None, "no Socket Mode connection"
        eid = f"env-{next(self._envelopes)}"
        self._ack_waiters[eid] = asyncio.get_running_loop().create_future()
        self._unacked[eid] = (kind, payload, retry_attempt)
        await conn.ws.send_json({"envelope_id": eid, "type": kind, "payload": payload,
                                 "accepts_response_payload": kind != "events_api",
                                 "retry_attempt": retry_attempt, "retry_reason": "timeout" if retry_attempt else ""})
        return eid

    async def _redeliver(self) -> None:
        pending, self._unacked = self._unacked, {}
        for kind, payload, attempt in pending.values():
            await self.send_envelope(payload, kind, retry_attempt=attempt + 1)

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """Slack's ``disconnect`` message: the client must open a new connection."""
        assert self._conn is not None
        await self._conn.ws.send_json({"type": "disconnect", "reason": reason,
                                       "debug_info": {"host": "fake"}})

    async def kill_socket(self) -> None:
        """The connection drops (no close handshake)."""
        assert self._conn is not None
        conn = self._conn
        if conn.request.transport is not None:
            conn.request.transport.abort()
        conn.done.set()

    def go_silent(self) -> None:
        """The connection stays open but nothing is read or sent any more (pings go unanswered)."""
        assert self._conn is not None and self._conn.reader is not None
        self._conn.reader.cancel()

