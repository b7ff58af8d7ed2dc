"""A browser tab on the relay that does not own its conversation (two relays, one PostgreSQL), in
headless Chromium (Debian's): it shows the owner's answer as it streams, its panel the owner's state
(answering, the agent's models, the owning relay), and its Stop button stops the owner's turn; the
panel never starts an agent on the relay serving the tab. Screenshotted while the answer streams."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.postgres import PostgresServer

from .conftest import CHROMIUM
from .test_browser import open_tab
from .test_dashboard_relay import say
from .test_dashboard_several_relays import KEY, TAB, agents_started, relays

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]

playwright_api = pytest.importorskip("playwright.async_api")


async def test_a_tab_on_the_other_relay_streams_the_owners_answer_and_its_stop_button_stops_it(
        browser: playwright_api.Browser, tmp_path: Path, postgres: PostgresServer) -> None:
    async with relays(tmp_path, postgres) as (a, b):
        await say(b, "hello", tab=TAB)  # relay b owns the conversation
        context_tab = await open_tab(browser, a, tmp_path, tab_id=TAB)  # the browser's tab, on relay a
        page = context_tab.page
        await context_tab.answer("demo agent")
        await page.locator("dd.status-relay", has_text="relay-b").wait_for()
        await context_tab.send("slow")
        await page.locator("#messages .msg-agent", has_text="one word").wait_for()
        await page.locator(".status-state", has_text="answering").wait_for()
        options = await page.locator("#model option").all_inner_texts()
        assert options == ["demo-fast", "demo-careful"]  # the owner's agent's models
        await context_tab.shot("non-owner-tab-answering")
        await page.click("#stop")
        await context_tab.answer("Stopped.")
        await page.locator(".status-state", has_text="idle").wait_for()
        assert context_tab.errors == []
        assert agents_started(tmp_path) == 1
        assert a.engine is not None and KEY not in a.engine.conversations

