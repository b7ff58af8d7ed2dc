"""The whole ``acp-relay run`` process against the fake Discord: it answers, stops cleanly, comes
back answering what was written while it was down, and exits 2 with one sentence on a refused intent."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.app import run_relay as run_relay_in_process
from core.config import load_config
from tests.conftest import FAKE_AGENT_PATH
from tests.discord.harness import ALICE, prompts, until
from tests.fakes.discord_api import FakeDiscord

CLI = (shutil.which("acp-relay", path=str(Path(sys.executable).parent))
       or str(Path(sys.executable).with_name("acp-relay")))
PROCESS_GUARD_S = 40.0


def write_config(tmp: Path, fake: FakeDiscord) -> Path:
    args = [str(FAKE_AGENT_PATH), "--record", str(tmp / "record.jsonl"), "--state-dir", str(tmp / "agent-state")]
    config: dict[str, Any] = {
        "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(tmp)}},
        "store": {"path": str(tmp / "relay.db")},
        "engine": {"edit_interval_s": 0.1},
        "surfaces": {"dashboard": {"enabled": False},
                     "discord": {"enabled": True, "allowed_user_ids": [ALICE],
                                 "allowed_channel_ids": [next(iter(fake.channels))],
                                 "api_base_url": fake.api_base, "gateway_url": fake.gateway_url}},
    }
    path = tmp / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def environment(tmp: Path, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_", "XDG_", "DISCORD_"))}
    env.update(HOME=str(tmp), XDG_STATE_HOME=str(tmp / "state"), DISCORD_BOT_TOKEN=token, PYTHONUNBUFFERED="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    return env


async def run_relay(tmp: Path, fake: FakeDiscord) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(CLI, "run", "--config", str(write_config(tmp, fake)),
                                                env=environment(tmp, fake.token), stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)


async def stop(proc: asyncio.subprocess.Process) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), PROCESS_GUARD_S)
    return proc.returncode or 0, err.decode()


@contextlib.asynccontextmanager
async def connected_relay(tmp: Path, fake: FakeDiscord) -> AsyncIterator[list[tuple[int, str]]]:
    """``acp-relay run``, connected to the gateway; stopped (SIGTERM) at the end, its exit code and
    stderr then in the list yielded."""
    ended: list[tuple[int, str]] = []
    proc = await run_relay(tmp, fake)
    try:
        await fake.connected(PROCESS_GUARD_S)
        yield ended
    finally:
        ended.append(await stop(proc))


async def test_acp_relay_run_answers_on_discord_stops_cleanly_and_catches_up_after_a_restart(
        tmp_path: Path, fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    dm = fake.dm(ALICE)
    async with connected_relay(tmp_path, fake) as ended:
        await fake.say(dm, ALICE, "text hello from the process")
        await until(lambda: any("hello from the process" in m["content"] and "⏱" in m["content"]
                                for m in fake.bot_messages(dm)), "the answer", timeout=PROCESS_GUARD_S)
    [(code, err)] = ended
    assert code == 0, err
    assert "acp-relay: stopped cleanly" in err
    assert "Traceback" not in err and fake.token not in err
    fake.add_message(dm, ALICE, "sent while the relay was down")
    proc = await run_relay(tmp_path, fake)
    try:
        await until(lambda: any("echo: sent while the relay was down" in m["content"] for m in fake.bot_messages(dm)),
                    "the missed message answered", timeout=PROCESS_GUARD_S)
        await until(lambda: "⏱" in fake.bot_messages(dm)[-1]["content"], "finished", timeout=PROCESS_GUARD_S)
    finally:
        code, err = await stop(proc)
    assert code == 0, err
    assert prompts(tmp_path / "record.jsonl") == ["text hello from the process", "sent while the relay was down"]
    assert len(fake.bot_messages(dm)) == 2  # each answered once, across two processes
    assert sorted(c["name"] for c in fake.commands["global"]) == ["agent", "compact", "help", "mode", "model", "new",
                                                                   "project", "sessions", "status", "stop"]


async def test_acp_relay_run_stops_an_answer_with_the_button_under_it(
        tmp_path: Path, fake_discord: FakeDiscord) -> None:
    """The Stop button through the whole process: pressed, the answer ends "Stopped.", its button gone,
    the presser told privately; the relay then stops cleanly."""
    fake = fake_discord
    dm = fake.dm(ALICE)
    async with connected_relay(tmp_path, fake) as ended:
        await fake.say(dm, ALICE, "text working on it\nhang")
        await until(lambda: any(fake.buttons(m) for m in fake.bot_messages(dm)), "the Stop button",
                    timeout=PROCESS_GUARD_S)
        [answer] = fake.bot_messages(dm)
        [(label, custom_id)] = fake.buttons(answer)
        assert label == "Stop"
        inter = await fake.press(dm, ALICE, int(answer["id"]), custom_id)
        await until(lambda: fake.interactions[inter].original is not None and not fake.thinking(), "press answered",
                    timeout=PROCESS_GUARD_S)
        await until(lambda: "⏱" in fake.channels[dm].messages[int(answer["id"])]["content"], "the answer ended",
                    timeout=PROCESS_GUARD_S)
    [(code, err)] = ended
    assert code == 0, err
    assert "Traceback" not in err and fake.token not in err
    assert (fake.interactions[inter].original or {}).get("content") == "Stopped."
    ended = fake.channels[dm].messages[int(answer["id"])]
    assert ended["content"].startswith("working on it") and "Stopped." in ended["content"]
    assert fake.buttons(ended) == []
    methods = [json.loads(line).get("method") for line in (tmp_path / "record.jsonl").read_text().splitlines()]
    assert methods.count("session/cancel") == 1


async def test_acp_relay_run_exits_2_with_one_sentence_when_discord_refuses_the_intent(
        tmp_path: Path, fake_discord: FakeDiscord) -> None:
    fake_discord.refuse_intents = True
    proc = await run_relay(tmp_path, fake_discord)
    _, err = await asyncio.wait_for(proc.communicate(), PROCESS_GUARD_S)
    text = err.decode()
    assert proc.returncode == 2, text
    assert "reconnecting" not in text
    lines = [line for line in text.splitlines() if line.startswith("acp-relay: discord:")]
    assert len(lines) == 1 and "Message Content" in lines[0] and "Developer Portal" in lines[0]
    assert "Traceback" not in text


async def test_doctor_checks_the_token_against_the_rest_api(tmp_path: Path, fake_discord: FakeDiscord) -> None:
    config = str(write_config(tmp_path, fake_discord))
    good = await asyncio.create_subprocess_exec(CLI, "doctor", "--config", config,
                                                env=environment(tmp_path, fake_discord.token),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(good.communicate(), PROCESS_GUARD_S)
    assert good.returncode == 0, out.decode() + err.decode()
    assert "surface discord: $DISCORD_BOT_TOKEN present; /users/@me: bot relay-bot (id " in out.decode()
    bad = await asyncio.create_subprocess_exec(CLI, "doctor", "--config", config,
                                               env=environment(tmp_path, "a-wrong-token"),
                                               stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(bad.communicate(), PROCESS_GUARD_S)
    assert bad.returncode == 1
    assert ("surface discord: $DISCORD_BOT_TOKEN present, but Discord REFUSED it (401 Unauthorized on /users/@me)"
            in out.decode())
    assert "a-wrong-token" not in out.decode() + err.decode()
    assert fake_discord.calls_to("GET", "/users/@me")
    missing = await asyncio.create_subprocess_exec(CLI, "doctor", "--config", config,
                                                   env={k: v for k, v in environment(tmp_path, "x").items()
                                                        if k != "DISCORD_BOT_TOKEN"},
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(missing.communicate(), PROCESS_GUARD_S)
    assert missing.returncode == 1 and "surface discord: $DISCORD_BOT_TOKEN MISSING" in out.decode()


async def test_the_started_relay_keeps_what_it_holds_out_of_later_collections(
        tmp_path: Path, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    """``acp-relay run`` (in this process: a child's collector cannot be looked at) freezes its heap once the
    Discord surface is connected and the engine started, so a burst's full collections do not walk it."""
    monkeypatch.setenv("DISCORD_BOT_TOKEN", fake_discord.token)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    config = load_config(write_config(tmp_path, fake_discord))
    dm = fake_discord.dm(ALICE)
    held = []  # a container made before the relay starts, alive throughout: it is frozen with the rest
    gc.unfreeze()
    assert gc.get_freeze_count() == 0 and gc.is_tracked(held)
    stop = asyncio.Event()
    relay = asyncio.create_task(run_relay_in_process(config, stop=stop))
    try:
        await fake_discord.connected(PROCESS_GUARD_S)
        await fake_discord.say(dm, ALICE, "text hello")
        await until(lambda: any("⏱" in m["content"] for m in fake_discord.bot_messages(dm)), "the answer",
                    timeout=PROCESS_GUARD_S)
        assert gc.get_freeze_count() > 0
        assert not any(obj is held for obj in gc.get_objects())  # no longer walked by any collection
    finally:
        stop.set()
        code = await asyncio.wait_for(relay, PROCESS_GUARD_S)
        gc.unfreeze()  # the test process collects as before
    assert code == 0
