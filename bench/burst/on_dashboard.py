"""The dashboard's side: no fake here, the relay is the server; the people are browser tabs.

Each person is a tab: its event stream (``GET /api/conversations/<tab>/events``, server-sent events)
is opened before they write (``watch``), and they write with ``POST .../messages``, authorised with
the access token as a script would. Visible text is an agent ``message`` event on the tab's stream,
timed as it arrives here.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from typing import Any

import aiohttp

from bench.burst.stats import Timeline

__all__ = ["DashboardSide"]

TOKEN_ENV = "ACP_RELAY_DASHBOARD_TOKEN"
CONNECT_S = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tab(i: int) -> str:
    return f"tab{i:07d}"


class DashboardSide:
    name = "dashboard"

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.port = _free_port()
        self.token = secrets.token_urlsafe(24)
        self.url = f"http://127.0.0.1:{self.port}"
        self.count = 0
        self._session: aiohttp.ClientSession | None = None
        self._streams: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                              timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
                                              headers={"Authorization": f"Bearer {self.token}"})

    async def close(self) -> None:
        await self.unwatch()
        if self._session is not None:
            await self._session.close()

    def people(self, count: int) -> None:
        self.count = max(self.count, count)

    def relay_settings(self) -> dict[str, Any]:
        return {"enabled": True, "host": "127.0.0.1", "port": self.port, "access_token_env": TOKEN_ENV}

    def env(self) -> dict[str, str]:
        return {TOKEN_ENV: self.token}

    def naive_args(self) -> list[str]:
        return ["--port", str(self.port)]

    async def watch(self, ids: range) -> None:
        """Open each tab's event stream and wait for its first event (the snapshot): from then on the
        tab sees every change. The server may still be starting: keep trying for a while."""
        subscribed = [asyncio.get_running_loop().create_future() for _ in ids]
        self._streams += [asyncio.create_task(self._stream(i, ready), name=f"bench-tab-{i}")
                          for i, ready in zip(ids, subscribed, strict=True)]
        async with asyncio.timeout(CONNECT_S + len(ids) * 0.05):
            await asyncio.gather(*subscribed)

    async def unwatch(self) -> None:
        streams, self._streams = self._streams, []
        for task in streams:
            task.cancel()
        await asyncio.gather(*streams, return_exceptions=True)

    async def _connect(self, i: int) -> aiohttp.ClientResponse:
        assert self._session is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CONNECT_S
        while True:
            try:
                response = await self._session.get(f"{self.url}/api/conversations/{_tab(i)}/events")
                response.raise_for_status()
                return response
            except aiohttp.ClientConnectionError:
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def _stream(self, i: int, subscribed: asyncio.Future[None]) -> None:
        try:
            response = await self._connect(i)
        except Exception as exc:
            if not subscribed.done():
                subscribed.set_exception(exc)
            return
        async with response:
            async for raw in response.content:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:])
                if not subscribed.done():
                    subscribed.set_result(None)
                self.timeline.call(f"event {event.get('type')}")
                messages = event.get("messages", []) if event.get("type") == "snapshot" else [event]
                for msg in messages:
                    if msg.get("type") == "message" and msg.get("role") == "agent":
                        self.timeline.shown(i, str(msg.get("text") or ""))

    async def write(self, i: int, text: str) -> None:
        assert self._session is not None
        self.timeline.written(i)
        async with self._session.post(f"{self.url}/api/conversations/{_tab(i)}/messages",
                                      json={"text": text, "id": secrets.token_hex(8)}) as response:
            if response.status != 202:
                raise RuntimeError(f"the dashboard answered {response.status} to a message: {await response.text()}")
