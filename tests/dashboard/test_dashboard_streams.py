"""A browser tab that goes away costs nothing from then on (issue 24): its event stream ends as soon as
the connection closes, not at the next keep-alive, so a relay that served thousands of tabs keeps no
stream of theirs. Ending streams that way must not cut short what another request was doing when its
browser went away (a message sent, a switch asked for): that request still finishes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
from aiohttp import ClientTimeout
from aiohttp.test_utils import TestClient, TestServer

from core.engine.surface import InboundMessage
from surfaces.dashboard import server
from surfaces.dashboard.server import AUTH, create_app
from surfaces.dashboard.surface import DashboardSurface
from surfaces.dashboard.transcript import Transcript
from tests.waiting import until

from .conftest import HANG_GUARD_S, DemoRelayFactory, EventStream, StandInHost

TAB = "tab1"


async def test_a_closed_tabs_event_stream_ends_at_once(demo_relay: DemoRelayFactory, monkeypatch) -> None:
    monkeypatch.setattr(server, "KEEPALIVE_S", 3600.0)  # no keep-alive write finds the browser gone
    relay = await demo_relay()
    assert relay.http is not None and relay.dashboard is not None
    subscribers = relay.dashboard.surface._subscribers
    response = await relay.http.get(f"/api/conversations/{TAB}/events",
                                    timeout=ClientTimeout(total=None, sock_read=None))
    assert (await EventStream(response).next())["type"] == "snapshot"
    assert TAB in subscribers
    response.close()  # the browser closes the tab
    await until(lambda: TAB not in subscribers, "the stream of a closed tab ended")


class _SlowHost(StandInHost):
    """Takes a message only once ``go`` is set (the browser has gone away by then)."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()
        self.started = asyncio.Event()

    async def submit(self, message: InboundMessage) -> None:
        self.started.set()
        await self.go.wait()
        await super().submit(message)


async def test_a_message_whose_browser_went_away_is_still_taken(tmp_path: Path) -> None:
    host = _SlowHost()
    app = create_app(DashboardSurface(Transcript.open(tmp_path / "dash.db")), host)
    # As the relay serves it (``launching``): a request whose browser went away is cancelled.
    client = TestClient(TestServer(app), headers={"Authorization": f"Bearer {app[AUTH].access_token}"})
    await client.start_server()
    try:
        posting = asyncio.create_task(client.post(f"/api/conversations/{TAB}/messages",
                                                  json={"text": "hello", "id": "m1"}))
        await asyncio.wait_for(host.started.wait(), HANG_GUARD_S)
        posting.cancel()  # the browser goes away while the message is being handed over
        try:
            await posting
        except (asyncio.CancelledError, aiohttp.ClientError):
            pass
        served = client.server.runner.server
        assert served is not None
        await until(lambda: not served.connections, "the server saw the browser go (and cancelled its request)")
        host.go.set()
        await until(lambda: [m.message_id for m in host.messages] == ["m1"], "the message was taken")
    finally:
        await client.close()
