"""The dashboard's side panel drives the agent like the chat commands do: the project and agent
pickers and the sessions list, in headless Chromium (Debian's) against a real relay with the scripted
agent; and the same controls over HTTP, bad input included. Each state is screenshotted."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from core.config import RelayConfig
from tests.conftest import FAKE_AGENT_PATH

from .conftest import CHROMIUM, DemoRelay
from .test_browser import open_tab

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]

playwright_api = pytest.importorskip("playwright.async_api")


def _config(tmp: Path) -> RelayConfig:
    for folder in ("work", "app", "web"):
        (tmp / folder).mkdir(exist_ok=True)
    fake = [str(FAKE_AGENT_PATH), "--sessions", "--record", str(tmp / "record.jsonl"), "--state-dir", str(tmp / "st")]
    other = [str(FAKE_AGENT_PATH), "--agent-name", "other-agent", "--record", str(tmp / "other.jsonl")]
    return RelayConfig.model_validate({
        "agents": {"fake": {"command": sys.executable, "args": fake, "cwd": str(tmp / "work")},
                   "other": {"command": sys.executable, "args": other, "cwd": str(tmp / "work")}},
        "default_agent": "fake",
        "projects": {"app": str(tmp / "app"), "web": str(tmp / "web"), "gone": str(tmp / "gone")},
        "store": {"path": str(tmp / "relay.db")},
        "timeouts": {"prompt_s": 60, "request_s": 15},
        "surfaces": {"dashboard": {"host": "127.0.0.1", "port": 0}},
    })


@pytest.fixture
async def relay(tmp_path: Path) -> Any:
    relay = DemoRelay(tmp_path, _config(tmp_path))
    await relay.start()
    yield relay
    await relay.close()


def _frames(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_project_and_agent_pickers_and_the_sessions_list(
        browser: playwright_api.Browser, relay: DemoRelay, tmp_path: Path) -> None:
    # A session started elsewhere (another tab: a desk) in the project web.
    said = await relay.post("desk", "choose", {"kind": "project", "value": "web"})
    assert said.status == 200
    sent = await relay.post("desk", "messages", {"text": "title Desk work\ntext at the desk", "id": "d1"})
    assert sent.status == 202
    await relay.idle("desk")

    tab = await open_tab(browser, relay, tmp_path)
    page = tab.page
    expect = playwright_api.expect
    await expect(page.locator("#project option")).to_have_text(["none", "app", "web", "gone"])
    await expect(page.locator("#agent option")).to_have_text(["fake", "other"])

    await page.select_option("#project", "web")
    await expect(page.locator("#sessions .control-note")).to_contain_text("Switched to the project web")
    await expect(page.locator(".status-project")).to_have_value("web")
    await page.select_option("#project", "gone")  # the folder is missing: a sentence, nothing changed
    await expect(page.locator("#sessions .control-note")).to_contain_text("does not exist")
    await expect(page.locator(".status-project")).to_have_value("web")

    await page.click("#sessions-show")
    first = page.locator("#sessions .session-list button").first
    await expect(first).to_contain_text("Desk work")
    await tab.shot("controls-1-sessions")
    await first.click()
    await expect(page.locator("#sessions .control-note")).to_contain_text("Continuing the session")
    await expect(page.locator("#sessions .session-list button.current")).to_contain_text("Desk work")
    await expect(page.locator(".status-title")).to_have_text("Desk work")
    await tab.send("text continued at the phone")
    await tab.answer("continued at the phone")
    await tab.shot("controls-2-attached")
    frames = _frames(tmp_path / "record.jsonl")
    prompts = [f["params"]["sessionId"] for f in frames if f.get("method") == "session/prompt"]
    assert len(prompts) == 2 and prompts[0] == prompts[1]  # the phone continued the desk's session
    assert [f["params"]["cwd"] for f in frames if f.get("method") == "session/list"][-1] == str(tmp_path / "web")

    await page.select_option("#agent", "other")
    await expect(page.locator("#sessions .control-note")).to_contain_text("Switched to the agent other")
    await tab.send("text hello other")
    await tab.answer("hello other")
    assert any(f.get("method") == "session/prompt" for f in _frames(tmp_path / "other.jsonl"))
    await tab.shot("controls-3-other-agent")

    await tab.send("/agent")  # the chat's own picker: the list as buttons under the message
    listed = page.locator("#messages .msg", has_text="Choose an agent")
    await listed.locator("button", has_text="fake").click()
    await page.locator("#messages .msg", has_text="Switched to the agent fake").wait_for()
    await expect(page.locator("#agent")).to_have_value("fake")
    await tab.shot("controls-4-chat-picker")
    assert not tab.errors


async def test_the_controls_over_http_and_their_bad_input(relay: DemoRelay) -> None:
    tab = "t1"
    bad = await relay.post(tab, "choices", {"kind": "nonsense"})
    assert bad.status == 400
    listed = await relay.post(tab, "choices", {"kind": "project"})
    assert listed.status == 200
    async with relay.client().post(f"/api/conversations/{tab}/choices", json={"kind": "project"}) as response:
        data = await response.json()
    assert [o["value"] for o in data["options"]] == ["app", "web", "gone"] and data["current"] == -1
    async with relay.client().post(f"/api/conversations/{tab}/choose",
                                   json={"kind": "project", "value": "nowhere"}) as response:
        said = await response.json()
    assert said["text"].startswith("There is no project called 'nowhere', so nothing was changed.")
    assert (await relay.status(tab))["project"] == ""
