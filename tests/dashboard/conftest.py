"""Fixtures of the dashboard tier: an event-stream reader, a stand-in host for the HTTP boundary,
and a whole relay (``core.lifecycle``: real Engine, real demo agent subprocess, real dashboard server).

Nothing here measures time: tests wait for a condition with generous hang guards.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.config import RelayConfig
from core.engine.engine import Engine
from core.engine.surface import ButtonPress, ConversationStatus, InboundMessage, PressResult
from core.lifecycle import Lifecycle
from core.store import Store
from surfaces.dashboard.launching import Dashboard, launch

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DEMO_CODE = "from core.demo_agent import main; raise SystemExit(main())"
HANG_GUARD_S = 30.0
Event = dict[str, Any]


class EventStream:
    """Reads a dashboard event stream and folds it into ``view`` (message id -> message), as the
    browser does."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.view: dict[str, Event] = {}
        self.typing = False
        self.events: list[Event] = []

    async def next(self) -> Event:
        data: list[str] = []
        while True:
            raw = await self.response.content.readline()
            if not raw:
                raise EOFError("the event stream ended")
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                data.append(line[6:])
            elif not line and data:
                event: Event = json.loads("\n".join(data))
                self._apply(event)
                return event

    def _apply(self, event: Event) -> None:
        self.events.append(event)
        if event["type"] == "snapshot":
            self.view = {m["id"]: m for m in event["messages"]}
            self.typing = event["typing"]
        elif event["type"] == "message":
            self.view[event["id"]] = event
        elif event["type"] == "delete":
            self.view.pop(event["id"], None)
        elif event["type"] == "typing":
            self.typing = event["active"]

    async def until(self, pred: Callable[[EventStream], object], what: str = "",
                    timeout: float = HANG_GUARD_S) -> None:
        try:
            async with asyncio.timeout(timeout):
                while not pred(self):
                    await self.next()
        except TimeoutError:
            raise AssertionError(f"never happened: {what or pred}; view: {self.texts()}") from None

    def texts(self, role: str = "agent") -> list[str]:
        return [m["text"] for m in self.view.values() if m["role"] == role]

    def with_text(self, fragment: str) -> list[Event]:
        return [m for m in self.view.values() if fragment in m["text"]]

    def has(self, fragment: str) -> bool:
        return bool(self.with_text(fragment))


@dataclass
class StandInHost:
    """Records what the dashboard's server asks of its host (the HTTP boundary, without agents);
    it is its own ``controls``."""

    name: str = "dashboard"
    queue_limit: int = 10
    messages: list[InboundMessage] = field(default_factory=list)
    presses: list[ButtonPress] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    switched: list[tuple[str, str]] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)

    @property
    def controls(self) -> StandInHost:
        return self

    async def submit(self, message: InboundMessage) -> None:
        self.messages.append(message)

    async def press(self, press: ButtonPress) -> PressResult:
        self.presses.append(press)
        return PressResult("resolved", "Allowed once.")

    async def stop(self, conversation_key: str) -> None:
        self.stopped.append(conversation_key)

    async def status(self, conversation_key: str) -> Any:
        return ConversationStatus("demo", "demo-fast", ("demo-fast", "demo-careful"), "/tmp", None, 12.5, 0, False)

    async def models(self, conversation_key: str) -> tuple[str | None, tuple[str, ...]]:
        self.listed.append(conversation_key)
        return "demo-fast", ("demo-fast", "demo-careful")

    async def set_model(self, conversation_key: str, model: str) -> None:
        self.switched.append((conversation_key, model))


def demo_config(tmp: Path, **dashboard: Any) -> RelayConfig:
    """The demo agent as a real subprocess (backend kiro, so its refusal frame is parsed)."""
    (tmp / "work").mkdir(exist_ok=True)
    env = {"XDG_STATE_HOME": str(tmp / "xdg"), "PYTHONPATH": str(ROOT)}
    return RelayConfig.model_validate({
        "agents": {"demo": {"command": sys.executable, "args": ["-c", DEMO_CODE], "env": env,
                            "cwd": str(tmp / "work"), "backend": "kiro"}},
        "default_agent": "demo",
        "store": {"path": str(tmp / "relay.db")},
        "retry": {"attempts": 3, "budget_s": 10, "base_delay_s": 0.05},
        "timeouts": {"prompt_s": 120, "request_s": 15},
        "surfaces": {"dashboard": {"host": "127.0.0.1", "port": 0, **dashboard}},
    })


def lifecycle(config: RelayConfig, *, busy_timeout_s: float = 5.0, **engine_kw: Any) -> Lifecycle:
    """A relay's parts in ``acp-relay run``'s order, on ``config``'s store (waiting ``busy_timeout_s``
    for another writer of its file)."""
    return Lifecycle(config, Store.open(config.store.path, busy_timeout_s=busy_timeout_s), **engine_kw)


@dataclass
class DemoRelay:
    """``acp-relay run`` in miniature: store, engine, dashboard; ``restart()`` keeps every file."""

    tmp: Path
    config: RelayConfig
    busy_timeout_s: float = 5.0
    relay: Lifecycle | None = None
    engine: Engine | None = None
    dashboard: Dashboard | None = None
    http: aiohttp.ClientSession | None = None

    @property
    def store(self) -> Store | None:
        return None if self.relay is None else self.relay.store

    async def start(self) -> DemoRelay:
        self.relay = lifecycle(self.config, busy_timeout_s=self.busy_timeout_s, cancel_wait_s=5.0)
        self.engine = self.relay.engine
        launched = await self.relay.launch("dashboard", lambda host, s: launch(host, s, announce=False))
        assert isinstance(launched, Dashboard)
        self.dashboard = launched
        await self.relay.start()
        self.http = aiohttp.ClientSession(base_url=self.dashboard.url, headers=self.bearer)
        return self

    @property
    def bearer(self) -> dict[str, str]:
        """The header a script sends: the dashboard's access token (made for the run unless set)."""
        assert self.dashboard is not None
        return {"Authorization": f"Bearer {self.dashboard.auth.access_token}"}

    async def close(self) -> None:
        """Shut down in ``acp-relay run``'s order (``Lifecycle.close``)."""
        if self.http is not None:
            await self.http.close()
            self.http = None
        if self.relay is not None:
            await self.relay.close()
            self.relay = self.engine = self.dashboard = None

    async def restart(self) -> None:
        await self.close()
        await self.start()

    @property
    def url(self) -> str:
        assert self.dashboard is not None
        return self.dashboard.url

    def client(self) -> aiohttp.ClientSession:
        assert self.http is not None
        return self.http

    async def post(self, tab: str, path: str, body: dict[str, Any]) -> aiohttp.ClientResponse:
        async with self.client().post(f"/api/conversations/{tab}/{path}", json=body) as response:
            await response.read()
            return response

    async def status(self, tab: str) -> dict[str, Any]:
        async with self.client().get(f"/api/conversations/{tab}/status") as response:
            assert response.status == 200
            data: dict[str, Any] = await response.json()
            return data

    async def events(self, tab: str) -> EventStream:
        response = await self.client().get(f"/api/conversations/{tab}/events",
                                           timeout=aiohttp.ClientTimeout(total=None, sock_read=None))
        assert response.status == 200
        stream = EventStream(response)
        await stream.next()  # the snapshot
        return stream

    async def idle(self, tab: str) -> None:
        async with asyncio.timeout(HANG_GUARD_S):
            while (await self.status(tab))["busy"]:
                await asyncio.sleep(0.05)


DemoRelayFactory = Callable[..., Awaitable[DemoRelay]]


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """Debian's headless Chromium driven by playwright (never a downloaded browser)."""
    playwright = pytest.importorskip("playwright.async_api")
    async with playwright.async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        await chromium.close()


@pytest.fixture
async def demo_relay(tmp_path: Path) -> AsyncIterator[DemoRelayFactory]:
    """``await demo_relay(**dashboard_settings)`` -> a started DemoRelay; closed at the end
    (``busy_timeout_s``: its store's, when a test holds the file)."""
    made: list[DemoRelay] = []

    async def build(*, busy_timeout_s: float = 5.0, **dashboard: Any) -> DemoRelay:
        relay = DemoRelay(tmp_path, demo_config(tmp_path, **dashboard), busy_timeout_s)
        made.append(relay)
        return await relay.start()

    yield build
    for relay in made:
        await relay.close()
