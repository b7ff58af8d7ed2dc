"""Driving the agent from Discord (real discord.py against the fake Discord): /project, /agent,
/sessions and /mode as slash commands with a name option and as ! aliases, their lists as buttons,
status with the cost, and the agent's own commands typed with ! or / reaching the agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import FAKE_AGENT_PATH
from tests.discord.harness import ALICE, RelayFactory, until
from tests.discord.test_discord_commands import answered
from tests.fakes.discord_api import EPHEMERAL


async def test_project_slash_command_buttons_and_bang_alias(relay: RelayFactory, tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "web").mkdir()
    r = await relay(projects={"app": str(tmp_path / "app"), "web": str(tmp_path / "web")})
    dm = r.fake.dm(ALICE)
    await until(lambda: r.fake.commands.get("global"), "the slash commands synced")
    synced = {c["name"]: c for c in r.fake.commands["global"]}
    assert {"sessions", "project", "agent", "mode"} <= set(synced)
    assert [o["name"] for o in synced["project"]["options"]] == ["name"]
    shown = await answered(r, await r.fake.slash(dm, ALICE, "project"))
    assert shown["content"].startswith("Project: none")
    buttons = dict(r.fake.buttons(shown))
    assert list(buttons) == ["app", "web"]
    press = await r.fake.press(dm, ALICE, int(shown["id"]), buttons["web"])
    said = await answered(r, press)
    assert said["content"].startswith("Switched to the project web") and said["flags"] & EPHEMERAL
    stale = await answered(r, await r.fake.press(dm, ALICE, int(shown["id"]), buttons["app"]))
    assert stale["content"] == "This button has expired, so the tap changed nothing."

    await r.fake.say(dm, ALICE, "!project nowhere")
    await until(lambda: any("no project called 'nowhere'" in t for t in r.bot_texts(dm)), "the ! alias answered")
    named = await answered(r, await r.fake.slash(dm, ALICE, "project", name="app"))
    assert named["content"].startswith("Switched to the project app")
    await r.fake.say(dm, ALICE, "usage 1 10 1.50 EUR\ntext hello")
    await until(lambda: any("1.50 EUR" in t for t in r.bot_texts(dm)), "the footer's cost")
    frames = [json.loads(x) for x in r.record.read_text().splitlines()]
    # each switch opened its session while the person wrote; the answer came from the last one's
    assert [f["params"]["cwd"] for f in frames if f.get("method") == "session/new"] == [str(tmp_path / "web"),
                                                                                         str(tmp_path / "app")]
    prompted = [f["params"]["sessionId"] for f in frames if f.get("method") == "session/prompt"]
    assert prompted == [r.store.get_conversation(f"discord:{dm}").session_id]
    status = await answered(r, await r.fake.slash(dm, ALICE, "status"))
    assert "Project: app" in status["content"] and "Cost so far: 1.50 EUR" in status["content"]


async def test_agent_and_sessions_and_mode(relay: RelayFactory, tmp_path: Path) -> None:
    other = {"command": sys.executable, "cwd": str(tmp_path),
             "args": [str(FAKE_AGENT_PATH), "--sessions", "--record", str(tmp_path / "other.jsonl"),
                      "--state-dir", str(tmp_path / "other-state")]}
    r = await relay(agents={"other": other})
    dm = r.fake.dm(ALICE)
    switched = await answered(r, await r.fake.slash(dm, ALICE, "agent", name="other"))
    assert switched["content"].startswith("Switched to the agent other")
    await r.fake.say(dm, ALICE, "title Desk\ntext at the desk")
    await until(lambda: any("at the desk" in t for t in r.bot_texts(dm)), "answered by the other agent")
    await r.fake.say(dm, ALICE, "!new")
    await until(lambda: any(t.startswith("Started a new conversation") for t in r.bot_texts(dm)), "reset")
    shown = await answered(r, await r.fake.slash(dm, ALICE, "sessions"))
    assert shown["content"].startswith("The agent's sessions in")
    label, token = r.fake.buttons(shown)[0]
    assert label.startswith("Desk · ")
    said = await answered(r, await r.fake.press(dm, ALICE, int(shown["id"]), token))
    assert said["content"].startswith("Continuing the session “Desk”")
    modes = await answered(r, await r.fake.slash(dm, ALICE, "mode"))
    assert [label for label, _ in r.fake.buttons(modes)] == ["Default", "Plan", "Auto"]
    refused = await answered(r, await r.fake.slash(dm, ALICE, "mode", name="auto"))
    assert refused["content"].startswith("Auto lets the agent run tools without asking")
    methods = [json.loads(x).get("method") for x in (tmp_path / "other.jsonl").read_text().splitlines()]
    assert "session/close" in methods and "session/resume" in methods and "session/set_mode" not in methods


async def test_agent_commands_typed_with_bang_reach_the_agent(relay: RelayFactory) -> None:
    r = await relay("--commands", "review:Review the diff")
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "hello")
    await until(lambda: any("echo: hello" in t for t in r.bot_texts(dm)) and r.idle(), "the first answer")
    await r.fake.say(dm, ALICE, "!review the tests")
    await until(lambda: "/review the tests" in r.prompts(), "sent as the agent's command")
    shown = await answered(r, await r.fake.slash(dm, ALICE, "help"))
    assert "!review" in shown["content"] and "Review the diff" in shown["content"]
