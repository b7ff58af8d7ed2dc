"""The dashboard opens only to its owner: a token always (generated for the run when none is set),
a one-time login link that expires, a server-side session that ends on logout, a ``Secure`` cookie
over TLS, no GET that starts anything, and no cross-site request that changes anything."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from core.config import RelayConfig
from core.redact import registered_secrets
from surfaces.dashboard.auth import LINK_TTL_S, Auth
from surfaces.dashboard.launching import Dashboard
from surfaces.dashboard.server import AUTH, COOKIE_NAME, create_app
from surfaces.dashboard.surface import DashboardSurface
from surfaces.dashboard.transcript import Transcript

from .conftest import StandInHost, lifecycle

API = "/api/conversations/tab1"
TOKEN = "a-token-of-24-characters"
SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


async def client_for(tmp_path: Path, engine: StandInHost, **app: Any) -> TestClient[Any, Any]:
    surface = DashboardSurface(Transcript.open(tmp_path / f"dash-{len(list(tmp_path.iterdir()))}.db"))
    client = TestClient(TestServer(create_app(surface, engine, **app)))
    await client.start_server()
    return client


@pytest.fixture
async def engine() -> StandInHost:
    return StandInHost()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def client(tmp_path: Path, engine: StandInHost, clock: Clock) -> AsyncIterator[TestClient[Any, Any]]:
    """A dashboard on loopback with no token configured: it makes its own."""
    c = await client_for(tmp_path, engine, clock=clock)
    yield c
    await c.close()


def auth_of(client: TestClient[Any, Any]) -> Auth:
    return client.server.app[AUTH]


async def log_in(client: TestClient[Any, Any], code: str, **headers: str) -> aiohttp.ClientResponse:
    """What the login page's form does: POST the link's code."""
    async with client.get(f"/login?code={code}") as page:
        assert page.status == 200
        html = await page.text()
    assert re.search(r'<form [^>]*method="post" action="/login">', html) and f'value="{code}"' in html
    async with client.post("/login", data={"code": code}, allow_redirects=False,
                           headers={"Origin": str(client.make_url("")).rstrip("/"), **headers}) as r:
        await r.read()
        return r


async def test_without_a_configured_token_another_local_account_gets_nothing(
        client: TestClient[Any, Any], engine: StandInHost) -> None:
    # Any process on this machine, as any user, can reach 127.0.0.1: it must not reach the agent.
    async with client.get("/") as r:
        assert r.status == 401 and "log in" in (await r.text()).lower()
    async with client.get(f"{API}/status") as r:
        assert r.status == 401
    async with client.post(f"{API}/messages", json={"text": "rm -rf ~", "id": "m1"}) as r:
        assert r.status == 401
    async with client.get(f"{API}/events") as r:
        assert r.status == 401
    assert engine.messages == [] and engine.listed == []
    auth = auth_of(client)
    assert auth.generated and len(auth.access_token) >= 32
    async with client.get(f"{API}/status", headers={"Authorization": f"Bearer {auth.access_token}"}) as r:
        assert r.status == 200  # scripts keep the bearer token


async def test_the_one_time_link_logs_in_once(client: TestClient[Any, Any]) -> None:
    code = auth_of(client).new_link()
    async with client.get(f"/login?code={code}") as r:
        assert r.status == 200  # showing the page uses nothing up: no GET has side effects
    r = await log_in(client, code)
    assert r.status == 303 and r.headers["Location"] == "/"
    cookie = r.cookies[COOKIE_NAME]
    assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
    assert not cookie["secure"]  # plain HTTP on loopback
    async with client.get("/") as page:
        assert page.status == 200 and 'id="composer"' in await page.text()
    client.session.cookie_jar.clear()
    again = await log_in(client, code)
    assert again.status == 403 and COOKIE_NAME not in again.cookies


async def test_an_unused_link_expires_after_minutes(client: TestClient[Any, Any], clock: Clock) -> None:
    auth = auth_of(client)
    stale = auth.new_link()
    assert 60 <= LINK_TTL_S <= 30 * 60
    clock.now += LINK_TTL_S - 1
    fresh = auth.new_link()
    clock.now += 2
    expired = await log_in(client, stale)
    assert expired.status == 403 and "expired" in await expired.text()
    assert (await log_in(client, fresh)).status == 303


async def test_sessions_are_random_server_side_and_end_on_logout(
        tmp_path: Path, client: TestClient[Any, Any], engine: StandInHost) -> None:
    auth = auth_of(client)
    first = (await log_in(client, auth.new_link())).cookies[COOKIE_NAME].value
    second = (await log_in(client, auth.new_link())).cookies[COOKIE_NAME].value
    assert first != second and auth.access_token not in (first, second)  # not derived from the token
    client.session.cookie_jar.clear()
    headers = {"Cookie": f"{COOKIE_NAME}={first}"}
    async with client.get(f"{API}/status", headers=headers) as r:
        assert r.status == 200
    async with client.post("/logout", headers={**headers, **SAME_ORIGIN}, allow_redirects=False) as r:
        assert r.status == 303 and r.headers["Location"] == "/"
        assert r.cookies[COOKIE_NAME].value == ""  # the browser forgets it
    async with client.get(f"{API}/status", headers=headers) as r:
        assert r.status == 401  # and so does the relay, even for a copy of the cookie
    async with client.get(f"{API}/status", headers={"Cookie": f"{COOKIE_NAME}={second}"}) as r:
        assert r.status == 200  # another browser's session goes on
    restarted = await client_for(tmp_path, engine, access_token=auth.access_token)
    try:
        async with restarted.get(f"{API}/status", headers={"Cookie": f"{COOKIE_NAME}={second}"}) as r:
            assert r.status == 401  # a restart ends every session
    finally:
        await restarted.close()


async def test_a_session_ends_on_its_own_after_a_while(client: TestClient[Any, Any], clock: Clock) -> None:
    auth = auth_of(client)
    await log_in(client, auth.new_link())
    async with client.get(f"{API}/status") as r:
        assert r.status == 200
    clock.now += auth.session_ttl_s + 1
    async with client.get(f"{API}/status") as r:
        assert r.status == 401


@pytest.mark.parametrize(("trust", "forwarded", "secure"), [
    (False, None, False), (False, "https", False), (True, "https", True), (True, "http", False),
    (True, "https, http", True)])
async def test_the_cookie_is_secure_behind_a_tls_proxy_only_when_trusted(
        tmp_path: Path, engine: StandInHost, trust: bool, forwarded: str | None, secure: bool) -> None:
    client = await client_for(tmp_path, engine, trust_forwarded_proto=trust)
    try:
        headers = {"X-Forwarded-Proto": forwarded} if forwarded else {}
        r = await log_in(client, auth_of(client).new_link(), **headers)
        assert r.status == 303
        assert bool(r.cookies[COOKIE_NAME]["secure"]) is secure
    finally:
        await client.close()


async def test_the_access_token_itself_logs_in_through_the_form(tmp_path: Path, engine: StandInHost) -> None:
    client = await client_for(tmp_path, engine, access_token=TOKEN)
    try:
        async with client.get("/") as r:
            assert 'name="token"' in await r.text()  # a set token may be typed in
        async with client.post("/login", data={"token": "wrong-token-of-enough-length"}, headers=SAME_ORIGIN,
                               allow_redirects=False) as r:
            assert r.status == 403 and COOKIE_NAME not in r.cookies
        async with client.post("/login", data={"token": TOKEN}, headers=SAME_ORIGIN, allow_redirects=False) as r:
            assert r.status == 303 and r.cookies[COOKIE_NAME].value not in ("", TOKEN)
        async with client.get(f"{API}/status") as r:
            assert r.status == 200
    finally:
        await client.close()


async def test_no_get_starts_the_agent_and_no_cross_site_request_changes_anything(
        client: TestClient[Any, Any], engine: StandInHost) -> None:
    bearer = {"Authorization": f"Bearer {auth_of(client).access_token}"}
    async with client.get(f"{API}/models", headers=bearer) as r:
        assert r.status == 405  # an <img> on another site used to start the agent
    assert engine.listed == []
    origin = str(client.make_url("")).rstrip("/")
    for foreign in ({"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                    {"Origin": "http://localhost:9999"}, {"Origin": "null"}):
        for path, body in (("models", {}), ("messages", {"text": "hi", "id": "m1"}), ("model", {"model": "x"}),
                           ("stop", {}), ("buttons", {"token": "t"})):
            async with client.post(f"{API}/{path}", json=body, headers={**bearer, **foreign}) as r:
                assert r.status == 403, (path, foreign)
        async with client.post("/logout", headers={**bearer, **foreign}) as r:
            assert r.status == 403
        async with client.post("/login", data={"code": auth_of(client).new_link()}, headers=foreign) as r:
            assert r.status == 403  # nobody else's site logs this browser in either
    assert not (engine.listed or engine.messages or engine.switched or engine.stopped or engine.presses)
    async with client.post(f"{API}/models", json={}, headers={**bearer, "Origin": origin}) as r:
        assert r.status == 200 and (await r.json())["models"] == ["demo-fast", "demo-careful"]
    assert engine.listed == ["dashboard:tab1"]


async def test_the_login_page_can_print_a_new_link_where_the_relay_runs(tmp_path: Path, engine: StandInHost,
                                                                        clock: Clock) -> None:
    printed: list[str] = []
    client = await client_for(tmp_path, engine, clock=clock, announce=printed.append)
    try:
        async with client.get("/") as r:
            assert 'action="/login/link"' in await r.text()
        async with client.post("/login/link", headers=SAME_ORIGIN) as r:
            assert r.status == 200 and "terminal" in await r.text()
        async with client.post("/login/link", headers=SAME_ORIGIN) as r:
            assert r.status == 429  # one a while: a stranger cannot flood the terminal
        assert len(printed) == 1
        code = printed[0].rsplit("code=", 1)[1]
        assert (await log_in(client, code)).status == 303
        clock.now += 60
        async with client.post("/login/link", headers={"Sec-Fetch-Site": "cross-site"}) as r:
            assert r.status == 403
        assert len(printed) == 1
    finally:
        await client.close()


async def test_refused_requests_are_logged_once_per_source_per_minute(
        client: TestClient[Any, Any], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        for _ in range(50):
            async with client.get(f"{API}/status") as r:
                assert r.status == 401
    refused = [r.getMessage() for r in caplog.records if r.getMessage().startswith("refused")]
    assert refused == ["refused a dashboard request without a login from 127.0.0.1"]


async def test_launch_makes_a_token_for_the_run_and_prints_the_link_on_its_own_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ACP_RELAY_DASHBOARD_TOKEN", raising=False)
    config = RelayConfig.model_validate({"store": {"path": str(tmp_path / "relay.db")},
                                         "surfaces": {"dashboard": {"host": "127.0.0.1", "port": 0}}})
    relay = lifecycle(config)
    dashboard = await relay.launch("dashboard")
    assert isinstance(dashboard, Dashboard)
    try:
        lines = capsys.readouterr().err.splitlines()
        assert dashboard.login_url is not None and dashboard.login_url in lines  # alone on its line
        assert dashboard.login_url.startswith(f"{dashboard.url}login?code=")
        token = dashboard.auth.access_token
        assert token in registered_secrets()  # an agent echoing it shows [redacted]
        assert not any(token in line for line in lines)
        async with aiohttp.ClientSession() as http:
            async with http.get(dashboard.url) as r:
                assert r.status == 401
            async with http.get(f"{dashboard.url}api/conversations/t/status",
                                headers={"Authorization": f"Bearer {token}"}) as r:
                assert r.status == 200
    finally:
        await relay.close()
    assert token not in registered_secrets()
