"""The dashboard's HTTP boundary with a stand-in host: routes, event stream and security."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import errno
import logging
import socket
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import ClientTimeout, web
from aiohttp.test_utils import TestClient, TestServer
from aiohttp.typedefs import Handler

from core.config import RelayConfig
from core.engine import wording
from core.engine.surface import InboundMessage, StartupError
from core.rounds import Round
from surfaces.dashboard import server
from surfaces.dashboard.attached import BODY_LIMIT
from surfaces.dashboard.errors import BindFailed, TokenMissing, WeakToken
from surfaces.dashboard.launching import Dashboard
from surfaces.dashboard.server import (
    AUTH,
    MIN_TOKEN_LENGTH,
    check_bind,
    create_app,
    is_loopback,
)
from surfaces.dashboard.surface import DashboardSurface, conversation_key
from surfaces.dashboard.transcript import Transcript
from surfaces.dashboard.wording import INTERNAL_FAILURE
from tests.rendering import md
from tests.waiting import until

from .conftest import EventStream, StandInHost, lifecycle

API = "/api/conversations/tab1"
TOKEN = "a-token-of-24-characters"


class Served:
    def __init__(self, client: TestClient[Any, Any], engine: StandInHost, surface: DashboardSurface) -> None:
        self.client, self.engine, self.surface = client, engine, surface

    @property
    def origin(self) -> str:
        return str(self.client.make_url("/")).rstrip("/")


async def serve(tmp_path: Path, token: str | None = None, engine: StandInHost | None = None,
                bearer: bool = True) -> tuple[Served, TestServer]:
    """A dashboard app; its client sends the access token (made for the run without ``token``)
    as a script would, unless ``bearer`` is false."""
    surface = DashboardSurface(Transcript.open(tmp_path / "dash.db"))
    engine = engine or StandInHost()
    app = create_app(surface, engine, access_token=token)
    server = TestServer(app)
    headers = {"Authorization": f"Bearer {app[AUTH].access_token}"} if bearer else {}
    client = TestClient(server, headers=headers)
    await client.start_server()
    return Served(client, engine, surface), server


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    s, _ = await serve(tmp_path)
    yield s
    await s.client.close()


@pytest.fixture
async def guarded(tmp_path: Path) -> AsyncIterator[Served]:
    s, _ = await serve(tmp_path, token="s3cret-token", bearer=False)  # create_app does not check the length
    yield s
    await s.client.close()


# -- binding ---------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "127.4.5.6", "localhost", "::1", "[::1]"])
def test_loopback_binds_need_no_token(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.168.1.10", "example.com"])
def test_other_binds_are_refused_without_a_token(host: str) -> None:
    with pytest.raises(StartupError, match="ACP_RELAY_DASHBOARD_TOKEN") as caught:
        check_bind(host, None)
    assert isinstance(caught.value, TokenMissing)
    assert (caught.value.host, caught.value.token_env) == (host, "ACP_RELAY_DASHBOARD_TOKEN")
    assert check_bind(host, TOKEN) == TOKEN


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "127.0.0.1", "localhost"])
@pytest.mark.parametrize("token", ["   ", "1", "short-token\n", " " * 20 + "x" * (MIN_TOKEN_LENGTH - 1)])
def test_a_blank_or_short_token_is_refused_on_any_bind(host: str, token: str) -> None:
    weak = f"ACP_RELAY_DASHBOARD_TOKEN holds .*at least {MIN_TOKEN_LENGTH} random"
    with pytest.raises(StartupError, match=weak) as caught:
        check_bind(host, token)
    assert isinstance(caught.value, WeakToken)
    assert (caught.value.length, caught.value.minimum, caught.value.loopback) == (
        len(token.strip()), MIN_TOKEN_LENGTH, is_loopback(host))


def test_a_token_is_stripped_and_a_loopback_bind_uses_it_too() -> None:
    assert check_bind("0.0.0.0", f"  {TOKEN}\n") == TOKEN
    assert check_bind("127.0.0.1", TOKEN) == TOKEN
    assert check_bind("127.0.0.1", None) is None
    with pytest.raises(StartupError, match=r"or unset ACP_RELAY_DASHBOARD_TOKEN to have one made for each run\.$"):
        check_bind("127.0.0.1", "1")


@pytest.mark.parametrize(("host", "token"), [("0.0.0.0", "   "), ("0.0.0.0", "1"), ("127.0.0.1", "short")])
async def test_the_relay_refuses_to_start_the_dashboard_with_a_weak_token(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, token: str) -> None:
    monkeypatch.setenv("ACP_RELAY_DASHBOARD_TOKEN", token)
    config = RelayConfig.model_validate({"store": {"path": str(tmp_path / "relay.db")},
                                         "surfaces": {"dashboard": {"host": host, "port": 0}}})
    relay = lifecycle(config)
    with pytest.raises(StartupError, match="could be guessed"):
        await relay.launch("dashboard")
    await relay.close()
    assert not (tmp_path / "relay-dashboard.db").exists()


async def test_a_port_in_use_is_one_sentence_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACP_RELAY_DASHBOARD_TOKEN", raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = RelayConfig.model_validate({"store": {"path": str(tmp_path / "relay.db")},
                                             "surfaces": {"dashboard": {"host": "127.0.0.1", "port": port}}})
        relay = lifecycle(config)
        with pytest.raises(StartupError) as caught:
            await relay.launch("dashboard")
        await relay.close()
    assert str(caught.value) == (f"127.0.0.1:{port} is already in use (another acp-relay?); "
                                 "change surfaces.dashboard.port")
    assert isinstance(caught.value, BindFailed)
    assert (caught.value.host, caught.value.port, caught.value.os_errno) == ("127.0.0.1", port, errno.EADDRINUSE)


async def test_the_relay_refuses_to_start_a_public_dashboard_without_a_token(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACP_RELAY_DASHBOARD_TOKEN", raising=False)
    config = RelayConfig.model_validate({"store": {"path": str(tmp_path / "relay.db")},
                                         "surfaces": {"dashboard": {"host": "0.0.0.0", "port": 0}}})
    relay = lifecycle(config)
    with pytest.raises(StartupError, match="without an access token"):
        await relay.launch("dashboard")
    await relay.close()
    assert not (tmp_path / "relay-dashboard.db").exists()


async def test_with_a_token_it_starts_and_prints_a_login_link_that_works_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ACP_RELAY_DASHBOARD_TOKEN", "tok-123-and-more-characters")
    config = RelayConfig.model_validate({"store": {"path": str(tmp_path / "relay.db")},
                                         "surfaces": {"dashboard": {"host": "0.0.0.0", "port": 0}}})
    relay = lifecycle(config)
    dashboard = await relay.launch("dashboard")
    assert isinstance(dashboard, Dashboard)
    try:
        err = capsys.readouterr().err
        assert dashboard.login_url in err.splitlines()
        assert "tok-123" not in err  # the access token itself is never printed
        port = dashboard.url.rsplit(":", 1)[1].rstrip("/")
        code = dashboard.login_url.split("code=", 1)[1]
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.get(f"{base}/") as r:
                assert r.status == 401
            async with http.post(f"{base}/login", data={"code": code}, allow_redirects=False) as r:
                assert r.status == 303 and r.headers["Location"] == "/"
            async with http.get(f"{base}/") as r:
                assert r.status == 200
        async with aiohttp.ClientSession() as other, other.post(f"{base}/login", data={"code": code}) as r:
            assert r.status == 403  # used already
    finally:
        await relay.close()
    assert "dashboard" in relay.engine.surfaces and relay.engine.permits("dashboard", "local")


# -- security --------------------------------------------------------------------------------

async def test_the_page_needs_no_emoji_and_no_marks_of_the_cores_words(served: Served) -> None:
    async with served.client.get("/") as r:
        assert r.status == 200 and r.content_type == "text/html"
        html = await r.text()
    glyphs = (*wording.TOOL_GLYPHS.values(), wording.FOOTER_GLYPH)
    assert not any(glyph in html for glyph in glyphs)  # the page's source needs no emoji font
    assert "core-marks" not in html and wording.REFUSAL_LEAD not in html  # blocks say what is what


async def test_the_page_and_its_files_are_served_with_strict_headers(served: Served) -> None:
    async with served.client.get("/") as r:
        assert r.status == 200
        html = await r.text()
        assert 'id="composer"' in html and "/static/app.js" in html
        assert "default-src 'self'" in r.headers["Content-Security-Policy"]
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    for path in ("/static/app.js", "/static/app.css", "/static/vendor/marked.umd.js",
                 "/static/vendor/purify.min.js", "/static/vendor/marked.LICENSE",
                 "/static/vendor/dompurify.LICENSE"):
        async with served.client.get(path) as r:
            assert r.status == 200, path
    async with served.client.get("/static/../server.py") as r:
        assert r.status in (403, 404)


async def test_without_a_token_only_loopback_host_names_are_answered(served: Served) -> None:
    for _ in range(2):  # the answer for a host name is remembered: the second time too
        for host in ("attacker.example:8787", "127.0.0.1.attacker.example", "[::1"):
            async with served.client.get("/", headers={"Host": host}) as r:
                assert r.status == 403, host  # DNS rebinding
        for host in ("localhost:8787", "127.0.0.1:8787", "[::1]:8787"):
            async with served.client.get(f"{API}/status", headers={"Host": host}) as r:
                assert r.status == 200, host


async def test_a_token_is_required_as_bearer_or_cookie(guarded: Served) -> None:
    client = guarded.client
    async with client.get("/") as r:
        assert r.status == 401 and "login link" in await r.text()
    async with client.get("/", headers={"Authorization": "Bearer s3cret-token"}) as r:
        assert r.status == 200
    async with client.get(f"{API}/status") as r:
        assert r.status == 401 and (await r.json())["error"]
    async with client.get(f"{API}/status", headers={"Authorization": "Bearer wrong"}) as r:
        assert r.status == 401
    async with client.get(f"{API}/status", headers={"Authorization": "Bearer s3cret-token"}) as r:
        assert r.status == 200
    async with client.get("/", headers={"Host": "dashboard.lan:8787", "Authorization": "Bearer s3cret-token"}) as r:
        assert r.status == 200  # with a token, any host name may be used


async def test_cross_site_requests_are_refused(served: Served) -> None:
    body = {"text": "hello", "id": "m1"}
    async with served.client.post(f"{API}/messages", json=body, headers={"Origin": "https://evil.example"}) as r:
        assert r.status == 403
    for origin in ("null", "http://[bad", "file://", f"{served.origin}.evil.example"):
        async with served.client.post(f"{API}/stop", json={}, headers={"Origin": origin}) as r:
            assert r.status == 403, origin
    async with served.client.post(f"{API}/stop", json={}, headers={"Sec-Fetch-Site": "cross-site"}) as r:
        assert r.status == 403
    async with served.client.post(f"{API}/messages", data="text=hello", headers={"Content-Type": "text/plain"}) as r:
        assert r.status == 415
    assert served.engine.messages == [] and served.engine.stopped == []
    async with served.client.post(f"{API}/messages", json=body, headers={"Origin": served.origin}) as r:
        assert r.status == 202
    assert len(served.engine.messages) == 1


@pytest.mark.parametrize(("method", "path"), [("GET", "events"), ("GET", "status"), ("POST", "models"),
                                              ("POST", "messages"), ("POST", "buttons"), ("POST", "stop"),
                                              ("POST", "model")])
async def test_bad_tab_ids_are_refused(served: Served, method: str, path: str) -> None:
    for tab in ("a%20b", "x" * 65, "..%2Fx", "%C3%A9"):
        async with served.client.request(method, f"/api/conversations/{tab}/{path}", json={}) as r:
            assert r.status == 400, (tab, r.status)
            assert (await r.json())["error"] == "bad tab id"


async def test_malformed_bodies_are_refused(served: Served) -> None:
    for body in ([], {"text": 5}, {}, {"text": "  "}, {"text": "hi", "id": "../x"}, {"text": "hi", "id": 3}):
        async with served.client.post(f"{API}/messages", json=body) as r:
            assert r.status == 400, body
    async with served.client.post(f"{API}/messages", data="{not json",
                                  headers={"Content-Type": "application/json"}) as r:
        assert r.status == 400
    assert served.engine.messages == []


async def test_a_deeply_nested_body_is_a_bad_request(served: Served) -> None:
    for path, field in (("messages", "text"), ("buttons", "token"), ("model", "model")):
        async with served.client.post(f"{API}/{path}", data="[" * 100_000 + "]" * 100_000,
                                      headers={"Content-Type": "application/json"}) as r:
            assert r.status == 400, path
            assert (await r.json()) == {"error": f"expected a JSON object with a string {field!r}"}
    assert served.engine.messages == [] and served.engine.presses == [] and served.engine.switched == []


class BrokenHost(StandInHost):
    """An engine with a bug: its exception text must not reach the browser."""

    async def stop(self, conversation_key: str) -> None:
        raise RuntimeError("secret detail from /home/someone/.config")

    async def status(self, conversation_key: str) -> Any:
        raise KeyError("secret detail from the store")


async def test_an_unexpected_exception_is_a_plain_json_500_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    asyncio.get_running_loop().set_debug(True)  # aiohttp then puts tracebacks into its own error pages
    s, _ = await serve(tmp_path, engine=BrokenHost())
    try:
        with caplog.at_level(logging.ERROR):
            async with s.client.post(f"{API}/stop", json={}) as r:
                assert r.status == 500 and r.content_type == "application/json"
                text = await r.text()
            async with s.client.get(f"{API}/status") as r:
                assert r.status == 500 and (await r.json()) == {"error": INTERNAL_FAILURE}
    finally:
        await s.client.close()
    assert "secret" not in text and "Traceback" not in text and "RuntimeError" not in text
    assert INTERNAL_FAILURE.count(".") == 1 and INTERNAL_FAILURE.endswith(".")
    failures = [r for r in caplog.records if r.exc_info]
    assert len(failures) == 2  # one traceback per failed request
    assert {type(r.exc_info[1]) for r in failures if r.exc_info} == {RuntimeError, KeyError}


async def test_a_broken_event_stream_ends_and_is_logged_once(
        served: Served, caplog: pytest.LogCaptureFixture) -> None:
    response = await served.client.get(f"{API}/events", timeout=ClientTimeout(total=None, sock_read=None))
    stream = EventStream(response)
    await stream.next()
    with caplog.at_level(logging.ERROR):
        served.surface._publish("tab1", {"type": "message", "bad": object()})  # not JSON-serialisable
        with pytest.raises(EOFError):
            await asyncio.wait_for(stream.next(), 5)
    response.close()
    assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [TypeError]
    assert "tab1" not in served.surface._subscribers  # the failed stream left nothing subscribed


# -- the API -------------------------------------------------------------------------------

async def test_a_message_becomes_one_inbound_message_and_shows_in_the_transcript(served: Served) -> None:
    async with served.client.post(f"{API}/messages", json={"text": "/compact", "id": "c1d2"}) as r:
        assert r.status == 202 and (await r.json()) == {"id": "c1d2"}
    (msg,) = served.engine.messages
    assert (msg.surface, msg.conversation_key, msg.user_id, msg.display_name, msg.text, msg.message_id) == (
        "dashboard", "dashboard:tab1", "local", "you", "/compact", "c1d2")
    assert [(m["role"], m["text"]) for m in served.surface.snapshot("tab1")["messages"]] == [("user", "/compact")]


async def test_buttons_stop_status_and_model_reach_the_engine(served: Served) -> None:
    async with served.client.post(f"{API}/buttons", json={"token": "tok", "id": "m9"}) as r:
        assert r.status == 200 and (await r.json()) == {"outcome": "resolved", "text": "Allowed once."}
    (press,) = served.engine.presses
    assert (press.surface, press.conversation_key, press.user_id, press.token, press.message_id) == (
        "dashboard", "dashboard:tab1", "local", "tok", "m9")
    async with served.client.post(f"{API}/stop", json={}) as r:
        assert r.status == 200
    assert served.engine.stopped == ["dashboard:tab1"]
    async with served.client.get(f"{API}/status") as r:
        status = await r.json()
    assert status == {"agent": "demo", "model": "demo-fast", "models": ["demo-fast", "demo-careful"],
                      "cwd": "/tmp", "session_id": None, "context_pct": 12.5, "queue_length": 0, "busy": False,
                      "model_name": None, "project": "", "title": "", "mode": "", "cost": "",
                      "compaction_summary": "", "relay": None}
    async with served.client.post(f"{API}/model", json={"model": "demo-careful"}) as r:
        assert r.status == 200
    assert served.engine.switched == [("dashboard:tab1", "demo-careful")]
    async with served.client.post(f"{API}/models", json={}) as r:
        assert r.status == 200 and (await r.json()) == {"model": "demo-fast", "models": ["demo-fast", "demo-careful"]}
    assert served.engine.listed == ["dashboard:tab1"]


async def test_the_event_stream_sends_a_snapshot_then_live_changes(served: Served) -> None:
    key = conversation_key("tab1")
    first = await served.surface.send(key, md(served.surface, "already there"))
    response = await served.client.get(f"{API}/events", timeout=ClientTimeout(total=None, sock_read=None))
    assert response.headers["Content-Type"].startswith("text/event-stream")
    stream = EventStream(response)
    snapshot = await stream.next()
    assert snapshot["type"] == "snapshot" and [m["id"] for m in snapshot["messages"]] == [first]
    await served.surface.typing(key, True)
    mid = await served.surface.send(key, md(served.surface, "streaming…"))
    await served.surface.edit(key, mid, md(served.surface, "streaming… done"))
    await served.surface.delete(key, first)
    await stream.until(lambda s: first not in s.view and s.has("done"), "the live changes")
    assert [e["type"] for e in stream.events] == ["snapshot", "typing", "message", "message", "delete"]
    assert stream.typing
    served.surface.close()  # shutting down ends the stream
    with pytest.raises(EOFError):
        await asyncio.wait_for(stream.next(), 5)
    response.close()


async def test_a_stream_arms_no_timer_for_each_event_it_waits_for(served: Served) -> None:
    # Issue 24: each wait for the next event armed a keep-alive timer and cancelled it; with thousands of
    # tabs streaming at once the loop's timer heap took a tenth of the streams' CPU. Counted, not timed.
    response = await served.client.get(f"{API}/events", timeout=ClientTimeout(total=None, sock_read=None))
    stream = EventStream(response)
    await stream.next()
    loop = asyncio.get_running_loop()
    armed = 0
    call_at = loop.call_at

    def counting(when: float, callback: Any, *args: Any, context: Any = None) -> asyncio.TimerHandle:
        nonlocal armed
        armed += 1
        return call_at(when, callback, *args, context=context)

    async with asyncio.timeout(30):  # armed before the count: the one timer of this test's own
        loop.call_at = counting  # type: ignore[method-assign]  # asyncio's, watched: how many timers are armed
        try:
            for i in range(50):  # one at a time: the stream waits for each
                served.surface._publish("tab1", {"type": "typing", "active": i % 2 == 0})
                assert (await stream.next())["active"] is (i % 2 == 0)
        finally:
            del loop.call_at
    assert armed < 10, f"{armed} timers armed for 50 events"
    response.close()


async def test_queued_events_arrive_in_order_and_a_quiet_stream_gets_keep_alives(
        served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "KEEPALIVE_S", 0.05)
    response = await served.client.get(f"{API}/events", timeout=ClientTimeout(total=None, sock_read=None))
    stream = EventStream(response)
    await stream.next()
    for i in range(5):  # queued at once: taken from the queue without waiting
        served.surface._publish("tab1", {"type": "typing", "active": i % 2 == 0})
    got = [await asyncio.wait_for(stream.next(), 5) for _ in range(5)]
    assert [e["active"] for e in got] == [True, False, True, False, True]
    assert await asyncio.wait_for(response.content.readline(), 5) == b": keep-alive\n"  # nothing for a while
    served.surface._publish("tab1", {"type": "typing", "active": False})
    assert (await asyncio.wait_for(stream.next(), 5))["active"] is False  # and the stream goes on after it
    response.close()
    await until(lambda: "tab1" not in served.surface._subscribers, "a browser that went away is noticed")


@dataclass
class JournalingHost(StandInHost):
    """Journals as the core's host does: what is submitted in one round of the loop, together
    (``core.rounds.Round``); notes the round of the loop of each journal and what the tab showed then."""

    rounds: list[int] = dataclasses.field(default_factory=list)
    shown_then: list[list[str]] = dataclasses.field(default_factory=list)
    surface: DashboardSurface | None = None
    tick: Callable[[], int] = lambda: 0

    def __post_init__(self) -> None:
        self._journal: Round[InboundMessage, None] = Round(self._write)

    async def submit(self, message: InboundMessage) -> None:
        await self._journal.submit(message)

    def _write(self, messages: list[InboundMessage]) -> list[None]:
        assert self.surface is not None
        self.rounds.append(self.tick())
        self.shown_then.append([m["text"] for m in self.surface.snapshot("tab1")["messages"]])
        self.messages.extend(messages)
        return [None] * len(messages)


async def test_a_message_is_in_the_transcript_and_journaled_in_the_round_of_the_loop_it_came(
        tmp_path: Path) -> None:
    """Issue 24: the transcript's write and the journal's were a round of the loop each, one after the
    other, ahead of every first answer in a burst; both now come at the end of the round it came in,
    the transcript's first (the answer never shows above its question)."""
    loop = asyncio.get_running_loop()
    rounds = 0

    def count() -> None:
        nonlocal rounds
        rounds += 1
        ticking[0] = loop.call_soon(count)

    ticking = [loop.call_soon(count)]
    engine = JournalingHost(tick=lambda: rounds)
    surface = DashboardSurface(Transcript.open(tmp_path / "dash.db"))
    engine.surface = surface
    app = create_app(surface, engine)
    started: list[int] = []

    @web.middleware
    async def note_start(request: web.Request, handler: Handler) -> web.StreamResponse:
        started.append(rounds)
        return await handler(request)

    app.middlewares.append(note_start)
    client = TestClient(TestServer(app), headers={"Authorization": f"Bearer {app[AUTH].access_token}"})
    await client.start_server()
    try:
        async with client.post(f"{API}/messages", json={"text": "hello", "id": "m1"}) as r:
            assert r.status == 202
    finally:
        ticking[0].cancel()
        await client.close()
    assert [m.message_id for m in engine.messages] == ["m1"]
    assert engine.shown_then == [["hello"]]  # in the transcript before it was journaled
    assert [journaled - start for journaled, start in zip(engine.rounds, started, strict=True)] == [1]


async def test_a_transcript_that_fails_is_the_requests_failure_and_the_message_is_still_answered(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The message is journaled in the round its transcript write failed in: it is answered (a resend
    of the same id is the same message), and the request says it failed, logged once."""
    s, _ = await serve(tmp_path)
    s.surface.transcript.close()  # the transcript's file is gone from under it
    try:
        with caplog.at_level(logging.ERROR):
            async with s.client.post(f"{API}/messages", json={"text": "hello", "id": "m1"}) as r:
                assert r.status == 500 and (await r.json()) == {"error": INTERNAL_FAILURE}
    finally:
        await s.client.close()
    assert [m.message_id for m in s.engine.messages] == ["m1"]
    assert [type(r.exc_info[1]) for r in caplog.records if r.exc_info] == [sqlite3.ProgrammingError]


async def test_files_sent_with_a_message_become_its_attachments_and_are_named_in_the_transcript(
        served: Served) -> None:
    png = b"\x89PNG\r\n\x1a\n0000"
    files = [{"name": "notes.txt", "type": "text/plain", "size": 5, "data": base64.b64encode(b"hello").decode()},
             {"name": "shot.png", "type": "image/png", "size": len(png), "data": base64.b64encode(png).decode()},
             {"name": "big.log", "type": "text/plain", "size": 9_000_000},  # the page left its bytes out
             {"name": "a.pdf", "type": "application/pdf", "size": 4, "data": base64.b64encode(b"%PDF").decode()}]
    async with served.client.post(f"{API}/messages", json={"text": "", "id": "f1", "files": files}) as r:
        assert r.status == 202, await r.text()
    (msg,) = served.engine.messages
    assert msg.text == ""
    assert [(a.kind, a.name, a.data) for a in msg.attachments] == [
        ("file", "notes.txt", b"hello"), ("image", "shot.png", png), ("file", "big.log", b""), ("file", "a.pdf", b"")]
    assert [(m["role"], m["text"]) for m in served.surface.snapshot("tab1")["messages"]] == [
        ("user", "Attached: notes.txt, shot.png, big.log, a.pdf")]


async def test_files_that_are_not_what_the_page_sends_are_a_bad_request(served: Served) -> None:
    for files, said in ((["x"], "each file must be an object"),
                        ([{"name": "", "type": "text/plain"}], "each file needs a name and a type"),
                        ([{"name": "a", "type": "text/plain", "data": "not base64!"}], "the data of 'a' is not base64"),
                        ([{"name": "a", "type": "text/plain", "size": 9, "data": "aGk="}],
                         "the data of 'a' is not the whole file"),
                        ([{"name": "a", "type": "t"}] * 11, "files must be a list of at most 10"),
                        ({"name": "a"}, "files must be a list of at most 10")):
        async with served.client.post(f"{API}/messages", json={"text": "hi", "files": files}) as r:
            assert r.status == 400 and (await r.json()) == {"error": said}, files
    assert served.engine.messages == []


async def test_a_body_larger_than_the_relay_takes_is_a_413_with_a_sentence(served: Served) -> None:
    data = base64.b64encode(b"x" * (BODY_LIMIT * 3 // 4 + 1024)).decode()
    body = {"text": "hi", "files": [{"name": "big.bin", "type": "application/octet-stream", "data": data}]}
    async with served.client.post(f"{API}/messages", json=body) as r:
        assert r.status == 413
        assert (await r.json()) == {"error": "the message and its files are larger than the relay takes at once "
                                             f"({BODY_LIMIT // (1024 * 1024)} MB)"}
    assert served.engine.messages == []
