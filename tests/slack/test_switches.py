"""Driving the agent from Slack (real slack-bolt against the fake Slack): ``!project``, ``!agent``,
``!sessions`` and ``!mode`` lists as buttons in the thread, a stale press, ``!status`` with the cost,
``!new`` closing the session, and the agent's own commands typed as ``!name``."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import CHANNEL, USER, SlackFactory, SlackRelayUnderTest, until


def _methods(relay: SlackRelayUnderTest) -> list[str]:
    frames = [json.loads(line) for line in (relay.tmp / "record.jsonl").read_text().splitlines()]
    return [f.get("method", "") for f in frames]


async def test_project_buttons_in_the_thread_and_status_with_cost(slack: SlackFactory, tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "web").mkdir()
    relay = await slack(sections={"projects": {"app": str(tmp_path / "app"), "web": str(tmp_path / "web")}})
    asked = await relay.mention("!project")
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)), "the project list")
    [offer] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    assert [b["text"]["text"] for b in offer.buttons] == ["app", "web"]
    assert offer.shown.startswith("Project: none")
    await relay.press(offer, "web")
    await until(lambda: relay.fake.find(CHANNEL, offer.ts).shown.startswith("Switched to the project web"))
    assert relay.fake.find(CHANNEL, offer.ts).buttons == []

    await relay.reply(asked.ts, "usage 1 10 0.02 USD\ntext hello")
    await until(lambda: any("0.02 USD" in t for t in relay.bot_texts(asked.ts)), "the footer's cost")
    await relay.reply(asked.ts, "!status")
    await until(lambda: relay.fake.ephemerals(USER), "the status")
    status = relay.fake.ephemerals(USER)[-1].shown
    assert "Project: web" in status and "Cost so far: 0.02 USD" in status
    await relay.reply(asked.ts, "!project nowhere")
    await until(lambda: any("no project called 'nowhere'" in t for t in relay.bot_texts(asked.ts)))


async def test_sessions_new_and_the_agents_commands(slack: SlackFactory) -> None:
    relay = await slack(flags=("--sessions", "--commands", "review:Review the diff"))
    asked = await relay.mention("title Desk\ntext at the desk")
    await relay.settled(asked.ts)
    await relay.reply(asked.ts, "!new")
    await until(lambda: "session/close" in _methods(relay), "the old session closed")
    await relay.reply(asked.ts, "!sessions")
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)), "the session list")
    [offer] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    label = offer.buttons[0]["text"]["text"]
    assert label.startswith("Desk · ")
    await relay.press(offer, label)
    await until(lambda: relay.fake.find(CHANNEL, offer.ts).shown.startswith("Continuing the session “Desk”"))
    assert "session/resume" in _methods(relay)
    await relay.reply(asked.ts, "!review please")
    await until(lambda: "/review please" in relay.prompts(), "typed as !review, sent as /review")
    await relay.settled(asked.ts)
    await relay.reply(asked.ts, "!mode auto")
    await until(lambda: any(t.startswith("Auto lets the agent run tools without asking")
                            for t in relay.bot_texts(asked.ts)), "refused under the gate")
