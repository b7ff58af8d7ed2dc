"""Two relays on one PostgreSQL store, each serving the dashboard (real engines, real demo agent
subprocesses, real dashboard servers): a tab served by the relay that does not own its conversation
shows the owner's answer as it streams, a reload on either relay shows the same transcript, and an
approval pressed there reaches the owner, as do its Stop button and its side panel (which never start
an agent of their own there: every agent process started writes its pid to one log)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.lifecycle import Lifecycle
from core.store import Store
from surfaces.dashboard.launching import Dashboard, launch
from surfaces.dashboard.surface import conversation_key
from tests.postgres import PostgresServer

from .conftest import HANG_GUARD_S, DemoRelay, EventStream, demo_config
from .test_dashboard_relay import answered, say

#: The demo agent, noting its pid in ``$PID_LOG`` first: one line per agent process started.
COUNTED_DEMO = ("import os; open(os.environ['PID_LOG'], 'a').write(f'{os.getpid()}\\n');"
                " from core.demo_agent import main; raise SystemExit(main())")

TAB = "shared-tab"
KEY = conversation_key(TAB)


@dataclass
class PgDemoRelay(DemoRelay):
    """A ``DemoRelay`` whose store is the shared PostgreSQL database at ``database_url``."""

    database_url: str = ""

    async def start(self) -> PgDemoRelay:
        from core.store.postgres import PostgresBackend  # psycopg: only where the server runs

        self.relay = Lifecycle(self.config, Store.on(PostgresBackend.connect(self.database_url)), cancel_wait_s=5.0)
        self.engine = self.relay.engine
        launched = await self.relay.launch("dashboard", lambda host, s: launch(host, s, announce=False))
        assert isinstance(launched, Dashboard)
        self.dashboard = launched
        assert self.engine.ownership is not None
        listening = asyncio.Event()  # what other relays broadcast from then on is heard here
        self.engine.ownership.on_listening.append(listening.set)
        await self.relay.start()
        async with asyncio.timeout(HANG_GUARD_S):
            await listening.wait()
        self.http = aiohttp.ClientSession(base_url=self.dashboard.url, headers=self.bearer)
        return self


@asynccontextmanager
async def relays(tmp_path: Path, postgres: PostgresServer, **dashboard: Any) -> AsyncIterator[list[PgDemoRelay]]:
    """Relays a and b on one database, each with ``dashboard`` settings."""
    url = postgres.schema_url("dash")
    started = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        config = demo_config(folder, **dashboard)
        demo = config.agents["demo"]
        counted = demo.model_copy(update={"args": ["-c", COUNTED_DEMO],
                                          "env": {**demo.env, "PID_LOG": str(tmp_path / "agents.pid")}})
        config = config.model_copy(update={"agents": {"demo": counted}, "store": config.store.model_copy(
            update={"relay_name": f"relay-{name}", "lease_s": 5.0})})
        started.append(PgDemoRelay(folder, config, database_url=url))
    try:
        for relay in started:
            await relay.start()
        yield started
    finally:
        for relay in started:
            await relay.close()


@pytest.fixture
async def two(tmp_path: Path, postgres: PostgresServer) -> AsyncIterator[tuple[PgDemoRelay, PgDemoRelay]]:
    async with relays(tmp_path, postgres) as (a, b):
        yield a, b


async def owned_by_b_watched_on_a(a: PgDemoRelay, b: PgDemoRelay) -> EventStream:
    """Relay b answers the tab's first message (it owns the conversation); the tab, open on relay a, shows it."""
    await say(b, "hello", tab=TAB)
    watching = await a.events(TAB)
    await watching.until(answered("demo agent"), "the first answer")
    return watching


def shown(stream: EventStream) -> list[tuple[str, str, str]]:
    """What the tab shows, in its order: (id, role, text)."""
    return [(m["id"], m["role"], m["text"]) for m in stream.view.values()]


async def test_a_tab_on_the_other_relay_shows_the_owners_whole_answer_and_a_reload_the_same(
        two: tuple[PgDemoRelay, PgDemoRelay]) -> None:
    a, b = two
    watching = await a.events(TAB)  # the tab is open on relay a
    at_owner = await b.events(TAB)
    await say(b, "hello", tab=TAB)  # relay b receives the first message: it owns the conversation
    await watching.until(answered("demo agent"), "the owner's answer in relay a's tab")
    await watching.until(lambda s: not s.typing, "typing off in relay a's tab")
    await at_owner.until(lambda s: not s.typing and s.has("⏱"), "the answer in relay b's tab")
    assert b.engine is not None and b.engine.ownership is not None and b.engine.ownership.lease(KEY) is not None
    assert a.engine is not None and a.engine.ownership is not None and a.engine.ownership.holder(KEY) == "relay-b"
    assert KEY not in a.engine.conversations  # relay a never ran it: what its tab shows came through the store
    (reply,) = watching.with_text("demo agent")  # once
    assert "This is a demo" in reply["text"] and "```python" in reply["text"]
    assert watching.texts("user") == ["hello"]
    assert any(e["type"] == "typing" and e["active"] for e in watching.events)
    assert shown(watching) == shown(at_owner)  # the same messages, in the same order, as on the owner
    for relay in (a, b):  # a reload, on either relay
        reloaded = await relay.events(TAB)
        assert shown(reloaded) == shown(watching)
        assert reloaded.events[0]["messages"] == list(watching.view.values())


async def test_an_approval_pressed_in_a_tab_on_the_other_relay_reaches_the_owner(
        two: tuple[PgDemoRelay, PgDemoRelay]) -> None:
    a, b = two
    watching = await owned_by_b_watched_on_a(a, b)
    await say(a, "run the tool please", tab=TAB)  # journaled by relay a, answered by its owner
    await watching.until(lambda s: any(m["buttons"] for m in s.view.values()), "approval buttons")
    (ask,) = [m for m in watching.view.values() if m["buttons"]]
    response = await a.post(TAB, "buttons", {"token": ask["buttons"][0]["token"], "id": ask["id"]})
    assert response.status == 200 and (await response.json())["outcome"] == "resolved"
    await watching.until(answered("allowed"), "the answer after the approval")
    await watching.until(lambda s: not s.view[ask["id"]]["buttons"], "the buttons go away")
    assert "Allowed once" in watching.view[ask["id"]]["text"]
    assert watching.texts("user") == ["hello", "run the tool please"]
    assert b.engine is not None and b.engine.ownership is not None and b.engine.ownership.lease(KEY) is not None


async def test_a_relay_cut_off_from_the_database_sends_its_tabs_the_whole_transcript_again(
        two: tuple[PgDemoRelay, PgDemoRelay], postgres: PostgresServer) -> None:
    a, b = two
    watching = await a.events(TAB)
    assert a.engine is not None and a.engine.ownership is not None
    listening_again = asyncio.Event()
    a.engine.ownership.on_listening.append(listening_again.set)
    cut = postgres.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()")
    assert "t" in cut.split()  # the relays' listening connections are gone: their broadcasts go unheard
    await say(b, "hello", tab=TAB)
    async with asyncio.timeout(HANG_GUARD_S):
        await listening_again.wait()
    await watching.until(answered("demo agent"), "the answer in relay a's tab, after it listens again")
    assert [e["type"] for e in watching.events].count("snapshot") >= 2  # the first, and the one sent again
    reloaded = await b.events(TAB)
    await reloaded.until(lambda s: not s.typing and s.has("⏱"), "the answer on the owner")
    await watching.until(lambda s: shown(s) == shown(reloaded), "the same transcript on both relays")


def agents_started(tmp_path: Path) -> int:
    """Agent processes started by either relay so far."""
    log = tmp_path / "agents.pid"
    return len(log.read_text().split()) if log.exists() else 0


async def test_the_stop_button_in_a_tab_on_the_other_relay_stops_the_owners_turn(
        two: tuple[PgDemoRelay, PgDemoRelay]) -> None:
    a, b = two
    watching = await owned_by_b_watched_on_a(a, b)
    await say(a, "slow", tab=TAB)
    await watching.until(lambda s: s.has("one word"), "the slow answer streaming")
    panel = await a.status(TAB)
    assert panel["busy"] and panel["relay"] == "relay-b"  # the owner's live state, not relay a's (idle)
    response = await a.post(TAB, "stop", {})
    assert response.status == 200
    await watching.until(answered("Stopped."), "the owner's turn stopped")
    assert not (await a.status(TAB))["busy"] and not (await b.status(TAB))["busy"]
    assert b.engine is not None and b.engine.ownership is not None and b.engine.ownership.lease(KEY) is not None
    assert a.engine is not None and KEY not in a.engine.conversations


async def test_the_side_panel_in_a_tab_on_the_other_relay_shows_and_changes_the_owners_conversation(
        two: tuple[PgDemoRelay, PgDemoRelay], tmp_path: Path) -> None:
    a, b = two
    await say(b, "hello", tab=TAB)  # relay b owns the conversation; its agent is the only one
    at_owner = await b.events(TAB)
    await at_owner.until(lambda s: not s.typing and s.has("⏱"), "the answer on the owner")
    assert agents_started(tmp_path) == 1
    async with a.client().post(f"/api/conversations/{TAB}/models", json={}) as response:  # as the tab opens
        listed = await response.json()
    assert response.status == 200 and listed == {"model": "demo-fast", "models": ["demo-fast", "demo-careful"]}
    async with a.client().post(f"/api/conversations/{TAB}/choices", json={"kind": "mode"}) as response:
        modes = await response.json()
    assert response.status == 200 and [o["value"] for o in modes["options"]] == ["default"]
    owner_view = await b.status(TAB)
    panel = await a.status(TAB)
    assert panel == owner_view and panel["models"] == ["demo-fast", "demo-careful"] and panel["session_id"]
    assert (await a.post(TAB, "model", {"model": "demo-careful"})).status == 200
    assert (await b.status(TAB))["model"] == "demo-careful"  # switched in the owner's session
    assert (await a.status(TAB))["model"] == "demo-careful"
    assert agents_started(tmp_path) == 1, "the panel on relay a started an agent of its own"
    assert a.engine is not None and KEY not in a.engine.conversations
    await say(a, "hello again", tab=TAB)  # the next answer uses the model chosen on relay a
    await at_owner.until(answered("demo-careful"), "the answer with the model chosen on relay a")
    assert agents_started(tmp_path) == 1


async def test_a_control_whose_owner_does_not_answer_says_so_and_the_panel_shows_the_stored_view(
        two: tuple[PgDemoRelay, PgDemoRelay]) -> None:
    a, _ = two
    assert a.store is not None
    from core.engine.ownership import LEASE_PREFIX

    ghost = a.store.leases.acquire(LEASE_PREFIX + KEY, "relay-gone", 60.0)  # a relay that died holding it
    assert ghost is not None
    async with a.client().post(f"/api/conversations/{TAB}/stop", json={}) as response:
        assert response.status == 400 and "did not answer" in (await response.json())["error"]
    panel = await a.status(TAB)
    assert panel["relay"] == "relay-gone" and not panel["busy"]  # the stored view, with the owner named
    assert a.engine is not None and KEY not in a.engine.conversations


async def test_a_new_tab_whose_panel_started_the_agent_is_answered_there_whichever_relay_gets_its_messages(
        two: tuple[PgDemoRelay, PgDemoRelay], tmp_path: Path) -> None:
    a, b = two
    async with a.client().post(f"/api/conversations/{TAB}/models", json={}) as response:  # a fresh tab opens
        assert response.status == 200 and (await response.json())["models"] == ["demo-fast", "demo-careful"]
    assert agents_started(tmp_path) == 1
    assert a.engine is not None and a.engine.ownership is not None and a.engine.ownership.lease(KEY) is not None
    watching = await b.events(TAB)
    await say(b, "hello", tab=TAB)  # its first message reaches relay b: relay a, which owns it, answers
    await watching.until(answered("demo agent"), "the answer")
    assert agents_started(tmp_path) == 1, "relay b started a second agent for the conversation"
    assert b.engine is not None and KEY not in b.engine.conversations


async def test_the_configured_max_tabs_bounds_the_transcripts_every_relay_shows(
        tmp_path: Path, postgres: PostgresServer) -> None:
    async with relays(tmp_path, postgres, max_tabs=1) as (a, b):
        for relay, tab in ((a, "first"), (b, "second")):
            stream = await relay.events(tab)
            assert (await relay.post(tab, "messages", {"text": "/help", "id": f"h-{tab}"})).status == 202
            await stream.until(lambda s: s.has("Commands:"), "the help text")
            stream.response.close()
        for relay in (a, b):
            assert (await relay.events("first")).view == {}
            assert len((await relay.events("second")).view) == 2
