"""Driving the agent from Telegram (real python-telegram-bot against the fake Bot API): the project,
agent, session and mode pickers as inline keyboards, status with cost, /new closing the session, and
the agent's own commands in the chat's command menu."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from surfaces.telegram.wording import COMMAND_MENU
from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.telegram_api import FakeBotApi
from tests.telegram.conftest import USER, TgFactory, TgRelay, until
from tests.telegram.test_telegram_buttons import keyboard

KEY = f"telegram:{USER}"


def _listing(api: FakeBotApi, lead: str) -> dict[str, Any]:
    return next(m for m in reversed(api.bot_messages(USER)) if m["text"].startswith(lead) and keyboard(m))


async def _said(r: TgRelay, api: FakeBotApi, text: str, lead: str) -> str:
    """Write ``text``; the bot's message starting with ``lead`` that came after it."""
    before = len(api.bot_messages(USER))
    api.say(USER, text)
    await until(lambda: any(m["text"].startswith(lead) for m in api.bot_messages(USER)[before:]), f"{text}'s answer")
    return next(m["text"] for m in api.bot_messages(USER)[before:] if m["text"].startswith(lead))


async def test_project_keyboard_switches_and_status_shows_project_and_cost(
        api: FakeBotApi, tg: TgFactory, tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "web").mkdir()
    r = await tg(projects={"app": str(tmp_path / "app"), "web": str(tmp_path / "web")})
    api.private(USER)
    api.say(USER, "/project")
    await until(lambda: any(keyboard(m) for m in api.bot_messages(USER)), "the project list")
    listing = _listing(api, "Project: none")
    choices = dict(keyboard(listing))
    assert list(choices) == ["app", "web"]
    tap = api.press(USER, listing["message_id"], choices["web"])
    await until(lambda: tap in api.answered)
    assert str(api.answered[tap]).startswith("Switched to the project web")
    await until(lambda: not keyboard(api.messages[(USER, listing["message_id"])]), "the list says what was chosen")

    api.say(USER, "usage 10 100 0.40 USD\ntext hello")
    await until(lambda: any("0.40 USD" in t and "⏱" in t for t in r.texts(USER)), "the footer with the cost")
    cwds = [f["params"]["cwd"] for f in r.frames() if f.get("method") == "session/new"]
    assert cwds == [str(tmp_path / "web")]
    status = await _said(r, api, "/status", "Agent:")
    assert "Project: web" in status and "Cost so far: 0.40 USD" in status

    stale = api.press(USER, listing["message_id"], choices["app"])
    await until(lambda: stale in api.answered)
    assert api.answered[stale] == "This button has expired, so the tap changed nothing."
    assert "no project called 'nowhere'" in await _said(r, api, "/project nowhere", "There is no project")
    await r.settled()
    record = r.store.get_conversation(KEY)
    assert record is not None and record.project == "web"


async def test_sessions_keyboard_attaches_and_new_closes(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg("--sessions")
    api.private(USER)
    api.say(USER, "title Desk work\ntext started at the desk")
    await until(lambda: any("started at the desk" in t for t in r.texts(USER)))
    desk = r.store.get_conversation(KEY)
    assert desk is not None and desk.session_id
    await _said(r, api, "/new", "Started a new conversation")
    assert [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/close"] == [desk.session_id]

    api.say(USER, "/sessions")
    await until(lambda: any(m["text"].startswith("The agent's sessions") for m in api.bot_messages(USER)))
    listing = _listing(api, "The agent's sessions")
    buttons = keyboard(listing)
    assert buttons[0][0].startswith("Desk work · ")
    tap = api.press(USER, listing["message_id"], buttons[0][1])
    await until(lambda: tap in api.answered)
    assert str(api.answered[tap]).startswith("Continuing the session “Desk work”")
    api.say(USER, "text at the phone")
    await until(lambda: any("at the phone" in t for t in r.texts(USER)))
    prompts = [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/prompt"]
    assert prompts[-1] == desk.session_id
    assert "session/resume" in r.methods()


async def test_mode_keyboard_and_a_refused_mode(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.say(USER, "/mode")
    await until(lambda: any(m["text"].startswith("Mode:") and keyboard(m) for m in api.bot_messages(USER)))
    listing = _listing(api, "Mode:")
    choices = dict(keyboard(listing))
    assert list(choices) == ["Default", "Plan", "Auto"]
    refused = api.press(USER, listing["message_id"], choices["Auto"])
    await until(lambda: refused in api.answered)
    assert str(api.answered[refused]).startswith("Auto lets the agent run tools without asking")
    assert await _said(r, api, "/mode plan", "Switched") == "Switched to Plan."
    await r.settled()
    assert [f["params"]["modeId"] for f in r.frames() if f.get("method") == "session/set_mode"] == ["plan"]


async def test_agent_commands_join_the_chat_menu_with_names_telegram_takes(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg("--commands", "create-plan:Make a plan,Review:Review the diff,compact:Shrink")
    api.private(USER)
    api.say(USER, "text hello")
    await until(lambda: USER in api.chat_commands, "the chat's menu")
    menu = [c["command"] for c in api.chat_commands[USER]]
    assert menu == [c for c, _ in COMMAND_MENU] + ["create_plan", "review"]  # compact is the relay's already
    assert [c["command"] for c in api.commands] == [c for c, _ in COMMAND_MENU]  # the global menu is unchanged
    api.say(USER, "/create_plan tidy up")
    await until(lambda: "/create-plan tidy up" in r.prompts(), "the command reached the agent")
    help_text = await _said(r, api, "/help", "Commands:")
    assert "/create_plan: Make a plan" in help_text


async def test_an_agent_switch_shows_the_new_agents_commands_before_anyone_writes(
        api: FakeBotApi, tg: TgFactory, tmp_path: Path) -> None:
    """The session opened ahead after the switch lists its commands a moment after its answer (as
    claude-agent-acp does): the chat's menu follows then, once, not after the next answer."""
    record = tmp_path / "other-record.jsonl"
    other = {"command": sys.executable, "cwd": str(tmp_path),
             "args": [str(FAKE_AGENT_PATH), "--record", str(record), "--commands", "deploy:Ship it",
                      "--commands-after", "0.3"]}
    r = await tg("--commands", "review:Review the diff", agents={"other": other})
    api.private(USER)
    api.say(USER, "text hello")
    await until(lambda: USER in api.chat_commands, "the first agent's menu")
    assert [c["command"] for c in api.chat_commands[USER]][-1] == "review"
    menus = len(api.calls("setMyCommands"))

    assert (await _said(r, api, "/agent other", "Switched")).startswith("Switched to the agent other")
    await until(lambda: [c["command"] for c in api.chat_commands[USER]][-1] == "deploy", "the other agent's menu")
    assert [c["command"] for c in api.chat_commands[USER]] == [c for c, _ in COMMAND_MENU] + ["deploy"]
    assert len(api.calls("setMyCommands")) == menus + 1  # never cleared first, set once
    assert "session/prompt" not in record.read_text()  # nobody wrote since the switch
