"""Issue 22 on the dashboard, in headless Chromium (Debian's ``/usr/bin/chromium``) on a real relay
with the scripted agent: the agent's form (buttons, toggles, an input for a written answer), the
link it asks to open shown as text. Each state is screenshotted into the test's ``tmp_path``."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.config import RelayConfig
from tests.conftest import FAKE_AGENT_PATH

from .conftest import CHROMIUM, DemoRelay
from .test_browser import Tab, open_tab

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]

playwright_api = pytest.importorskip("playwright.async_api")

FORM = {"message": "How should I refactor?", "schema": {"type": "object", "properties": {
    "strategy": {"type": "string", "title": "Strategy",
                 "oneOf": [{"const": "safe", "title": "Conservative"}, {"const": "bold", "title": "Bold"}]},
    "areas": {"type": "array", "title": "Areas", "items": {"type": "string", "enum": ["core", "ui", "docs"]}},
    "name": {"type": "string", "title": "Branch name"}}, "required": ["strategy", "areas", "name"]}}


def fake_config(tmp: Path, *flags: str) -> RelayConfig:
    """The scripted agent as a real subprocess behind the dashboard."""
    (tmp / "work").mkdir(exist_ok=True)
    return RelayConfig.model_validate({
        "agents": {"fake": {"command": sys.executable, "args": [str(FAKE_AGENT_PATH), *flags],
                            "cwd": str(tmp / "work")}},
        "default_agent": "fake",
        "store": {"path": str(tmp / "relay.db")},
        "timeouts": {"prompt_s": 120, "request_s": 15},
        "surfaces": {"dashboard": {"host": "127.0.0.1", "port": 0}},
    })


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[DemoRelay]:
    started = await DemoRelay(tmp_path, fake_config(tmp_path, "--steering")).start()
    yield started
    await started.close()


def agent_text(tab: Tab) -> Any:
    return tab.page.locator("#messages .msg-agent")


async def test_a_form_with_buttons_toggles_and_an_input(browser: Any, relay: DemoRelay, tmp_path: Path) -> None:
    tab = await open_tab(browser, relay, tmp_path)
    await tab.send(f"text before\nelicit {json.dumps(FORM)}\ntext after")
    card = tab.page.locator(".form-card", has_text="Strategy")
    await card.wait_for()
    assert await card.locator(".form-message").inner_text() == "How should I refactor?"
    await tab.shot("01-form-choice")
    article = tab.page.locator("#messages article", has=tab.page.locator(".form-card"))
    await article.locator("button.approval", has_text="Bold").click()
    await tab.page.locator(".form-card .form-question", has_text="Areas").wait_for()
    await article.locator("button.approval", has_text="☐ core").click()
    await article.locator("button.approval", has_text="☑ core").wait_for()
    await article.locator("button.approval", has_text="☐ docs").click()
    await article.locator("button.approval", has_text="☑ docs").wait_for()
    await tab.shot("02-form-toggles")
    await article.locator("button.approval", has_text="Done").click()
    reply = tab.page.locator(".form-card form.form-reply input")
    await reply.wait_for()
    await tab.shot("03-form-input")
    await reply.fill("feature/two-way")
    await reply.press("Enter")
    await tab.page.locator(".form-card .form-outcome", has_text="Answered").wait_for()
    done = await tab.answer("after")
    text = await done.inner_text()
    assert 'elicit:{"action":"accept","content":{"areas":["core","docs"],"name":"feature/two-way",' \
           '"strategy":"bold"}}' in text
    answers = await tab.page.locator(".form-card .form-answers li").all_inner_texts()
    assert answers == ["Strategy: Bold", "Areas: core, docs", "Branch name: feature/two-way"]
    assert await article.locator("button.approval").count() == 0
    await tab.shot("04-form-answered")
    assert tab.errors == []


async def test_a_link_to_open_is_text_with_done(browser: Any, relay: DemoRelay, tmp_path: Path) -> None:
    tab = await open_tab(browser, relay, tmp_path)
    await tab.send("text before\nelicit_url https://example.com/login Sign in to GitHub\ntext after")
    card = tab.page.locator(".form-card", has=tab.page.locator(".form-url"))
    await card.wait_for()
    assert await card.locator(".form-url").inner_text() == "https://example.com/login"
    assert await card.locator("a").count() == 0, "the page never makes the link clickable"
    await tab.shot("05-link")
    article = tab.page.locator("#messages article", has=card)
    await article.locator("button.approval", has_text="Done").click()
    await tab.answer("after")
    await card.locator(".form-outcome", has_text="Answered").wait_for()
    assert tab.errors == []


async def test_the_agents_files_are_download_links(browser: Any, relay: DemoRelay, tmp_path: Path) -> None:
    (tmp_path / "work" / "notes.md").write_text("# Notes\n")
    tab = await open_tab(browser, relay, tmp_path)
    await tab.send("text here you go\nlink notes.md\nlink ../relay.db")
    link = tab.page.locator("#messages a", has_text="notes.md")
    await link.wait_for()
    href = await link.evaluate("a => a.href")  # absolute, as the browser resolves it
    response = await tab.page.request.get(href)
    assert response.ok and await response.body() == b"# Notes\n"
    await tab.page.locator("#messages", has_text="relay.db was not sent").wait_for()
    await tab.shot("06-files")
    assert tab.errors == []


async def test_a_queued_message_offers_to_join_the_running_turn(browser: Any, relay: DemoRelay, tmp_path: Path) -> None:
    tab = await open_tab(browser, relay, tmp_path)
    await tab.send("text working\nwait_steer\ntext done")
    await tab.page.locator("#messages .msg-agent", has_text="working").wait_for()
    await tab.send("use tabs, not spaces")
    receipt = tab.page.locator("#messages article", has_text="Queued (position 1)")
    await receipt.locator("button.approval", has_text="Add to the running turn").wait_for()
    assert await receipt.locator("button.approval").all_inner_texts() == ["Add to the running turn", "Cancel"]
    # The panel beside it agrees: a turn runs, one message waits.
    await tab.page.locator(".status-state", has_text="answering").wait_for()
    await playwright_api.expect(tab.page.locator(".status-queue")).to_have_text("1")
    await tab.shot("07-receipt")
    await receipt.locator("button.approval", has_text="Add to the running turn").click()
    await tab.answer("steered:use tabs, not spaces")
    await tab.page.locator("#messages article", has_text="Added to the running turn: use tabs, not spaces").wait_for()
    await tab.settled()
    await tab.shot("08-steered")
    assert tab.errors == []


async def test_the_panel_follows_an_answer_while_it_streams(browser: Any, relay: DemoRelay, tmp_path: Path) -> None:
    """A chunk every 100 ms for 4 s: the panel says "answering" while the words still arrive (each event
    used to put its refresh off again, so it read "idle" until the stream paused or the 5 s poll came)."""
    tab = await open_tab(browser, relay, tmp_path)
    await tab.send("\n".join(["text streaming"] + ["sleep 0.1\ntext ."] * 40 + ["text the end"]))
    await tab.page.locator("#messages .msg-agent", has_text="streaming").wait_for()
    await tab.page.locator(".status-state", has_text="answering").wait_for()
    assert await tab.page.locator("#messages .msg-agent", has_text="the end").count() == 0  # still streaming
    await tab.shot("09a-streaming")
    await tab.answer("the end")
    await tab.settled()
    assert tab.errors == []


async def test_a_table_is_a_table(browser: Any, relay: DemoRelay, tmp_path: Path) -> None:
    tab = await open_tab(browser, relay, tmp_path)
    await tab.send('update {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", '
                   '"text": "| Name | Size |\\n|---|--:|\\n| a.py | 12 |\\n"}}')
    answer = await tab.answer("a.py")
    assert await answer.locator("table th").all_inner_texts() == ["Name", "Size"]
    assert await answer.locator("table td").all_inner_texts() == ["a.py", "12"]
    await tab.shot("09-table")
