"""Logging in to the dashboard in headless Chromium: the printed one-time link, ``Log out``, an
expired link, the ``Secure`` cookie behind a TLS proxy, and another site that tries to start the agent."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web

from core.config import RelayConfig
from surfaces.dashboard.auth import COOKIE_NAME, LINK_TTL_S
from tests.conftest import FAKE_AGENT_PATH

from .conftest import CHROMIUM, DemoRelay, DemoRelayFactory
from .test_browser import Tab, playwright_api

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


async def new_tab(browser: playwright_api.Browser, tmp_path: Path, headers: dict[str, str] | None = None) -> Tab:
    ctx = await browser.new_context(viewport={"width": 1200, "height": 900}, extra_http_headers=headers)
    return Tab(await ctx.new_page(), tmp_path)


def session_cookies(cookies: list[playwright_api.Cookie]) -> list[playwright_api.Cookie]:
    return [c for c in cookies if c.get("name") == COOKIE_NAME]


async def test_the_printed_link_opens_the_dashboard_once_and_log_out_ends_the_session(
        browser: playwright_api.Browser, demo_relay: DemoRelayFactory, tmp_path: Path) -> None:
    relay = await demo_relay()
    assert relay.dashboard is not None
    tab = await new_tab(browser, tmp_path)
    response = await tab.page.goto(relay.url)
    assert response is not None and response.status == 401  # no token set: one was made for this run
    await tab.page.locator("text=This dashboard needs you to log in.").wait_for()
    await tab.shot("20-login-needed")
    await tab.page.goto(relay.dashboard.login_url)  # what a newcomer opens
    await tab.page.wait_for_url(relay.url)
    await tab.page.locator("#conn[data-state=open]").wait_for()
    await tab.send("/compact")
    await tab.answer("Compacted")
    [cookie] = session_cookies(await tab.page.context.cookies())
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]
    await tab.shot("21-logged-in")
    await tab.page.click("#logout button")
    await tab.page.locator("text=This dashboard needs you to log in.").wait_for()
    assert session_cookies(await tab.page.context.cookies()) == []
    stolen = await browser.new_context()  # a copy of the old cookie is worth nothing now
    await stolen.add_cookies([{"name": COOKIE_NAME, "value": cookie["value"], "url": relay.url}])
    copied = await (await stolen.new_page()).goto(relay.url)
    assert copied is not None and copied.status == 401
    await tab.page.goto(relay.dashboard.login_url)  # the link again: it worked once
    await tab.page.locator("text=This login link has expired or was used already").wait_for()
    await tab.shot("22-link-used")
    assert [e for e in tab.errors if "401 (Unauthorized)" not in e and "403 (Forbidden)" not in e] == []


async def test_an_unused_link_expires_and_the_login_page_prints_a_new_one(
        browser: playwright_api.Browser, demo_relay: DemoRelayFactory, tmp_path: Path) -> None:
    relay = await demo_relay()
    assert relay.dashboard is not None
    auth = relay.dashboard.auth
    link = relay.dashboard.new_login_url()
    auth.clock = lambda: time.monotonic() + LINK_TTL_S + 1  # the newcomer came back from lunch
    tab = await new_tab(browser, tmp_path)
    await tab.page.goto(link)
    await tab.page.locator("text=This login link has expired or was used already").wait_for()
    await tab.shot("23-link-expired")
    printed: list[str] = []
    auth.announce = printed.append  # what acp-relay run prints to its terminal
    await tab.page.click("text=Print a new login link there")
    await tab.page.locator("text=A new login link is in the terminal").wait_for()
    assert len(printed) == 1
    await tab.page.goto(relay.url.rstrip("/") + printed[0])
    await tab.page.wait_for_url(relay.url)
    await tab.page.locator("#conn[data-state=open]").wait_for()


@pytest.mark.parametrize("trusted", [False, True])
async def test_the_cookie_is_secure_behind_a_tls_proxy_only_when_the_config_trusts_it(
        browser: playwright_api.Browser, demo_relay: DemoRelayFactory, tmp_path: Path, trusted: bool) -> None:
    relay = await demo_relay(trust_forwarded_proto=trusted)
    assert relay.dashboard is not None
    tab = await new_tab(browser, tmp_path, headers={"X-Forwarded-Proto": "https"})
    await tab.page.goto(relay.dashboard.login_url)
    await tab.page.wait_for_url(relay.url)
    await tab.page.locator("#conn[data-state=open]").wait_for()
    [cookie] = session_cookies(await tab.page.context.cookies())
    assert cookie["secure"] is trusted


def fake_agent_relay(tmp_path: Path) -> DemoRelay:
    """The dashboard on the scripted agent, which records every frame it receives."""
    (tmp_path / "work").mkdir(exist_ok=True)
    args = [str(FAKE_AGENT_PATH), "--record", str(tmp_path / "record.jsonl"), "--models", "m1,m2"]
    return DemoRelay(tmp_path, RelayConfig.model_validate({
        "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(tmp_path / "work")}},
        "store": {"path": str(tmp_path / "relay.db")},
        "surfaces": {"dashboard": {"host": "127.0.0.1", "port": 0}}}))


def sessions_started(tmp_path: Path) -> int:
    record = tmp_path / "record.jsonl"
    frames = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return sum(1 for f in frames if f.get("method") == "session/new")


async def test_another_site_cannot_start_the_agent(browser: playwright_api.Browser, tmp_path: Path) -> None:
    relay = fake_agent_relay(tmp_path)
    await relay.start()
    evil = web.Application()
    target = relay.url.rstrip("/")
    images = "".join(f'<img src="{target}/api/conversations/evil{i}/models">' for i in range(20))
    form = (f'<form id="f" method="post" action="{target}/api/conversations/evil/messages" enctype="text/plain">'
            '<input name="text" value="rm -rf ~"></form>')
    page_html = f"<!doctype html><body>{images}{form}</body>"
    async def attack(_request: web.Request) -> web.Response:
        return web.Response(text=page_html, content_type="text/html")

    evil.router.add_get("/", attack)
    runner = web.AppRunner(evil)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    evil_url = f"http://localhost:{runner.addresses[0][1]}/"  # localhost and 127.0.0.1 are different sites
    try:
        assert relay.dashboard is not None
        tab = await new_tab(browser, tmp_path)
        await tab.page.goto(relay.dashboard.login_url)  # the owner is logged in, in this very browser
        await tab.page.wait_for_url(relay.url)
        await tab.page.locator("#model:enabled option[value=m2]").wait_for(state="attached")
        assert sessions_started(tmp_path) == 1  # the owner's own tab asked for the models: that counts
        other = await tab.page.context.new_page()
        await other.goto(evil_url, wait_until="load")  # twenty images, each a GET of .../models
        await other.evaluate("document.getElementById('f').submit()")
        await other.wait_for_load_state("load")
        assert sessions_started(tmp_path) == 1, "another site started the agent"
        assert relay.engine is not None and not any(k.startswith("dashboard:evil") for k in relay.engine.conversations)
    finally:
        await runner.cleanup()
        await relay.close()
