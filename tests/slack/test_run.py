"""The whole ``acp-relay`` process against the fake Slack: run (a turn, then SIGTERM), start-up
refusals (exit 2, one sentence), doctor and check-config."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, BOT_USER, SIGNING_SECRET, TEAM, SlackFake

from .conftest import CHANNEL, USER, until

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 60.0


def write_config(tmp_path: Path, fake: SlackFake, **slack: object) -> Path:
    (tmp_path / "work").mkdir(exist_ok=True)
    config = {
        "agents": {"fake": {"command": sys.executable, "args": [str(FAKE_AGENT_PATH)], "cwd": str(tmp_path / "work")}},
        "store": {"path": str(tmp_path / "relay.db")},
        "engine": {"edit_interval_s": 0.05},
        "surfaces": {"dashboard": {"enabled": False},
                     "slack": {"enabled": True, "api_base_url": fake.api_url, "allowed_user_ids": [USER], **slack}},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def environment(tmp_path: Path, **tokens: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "ACP_RELAY_"))}
    env.update(HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(ROOT),
               SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_APP_TOKEN=APP_TOKEN, SLACK_SIGNING_SECRET=SIGNING_SECRET)
    env.update(tokens)
    return env


def command() -> list[str]:
    script = Path(sys.executable).with_name("acp-relay")
    return [str(script)] if script.exists() else [sys.executable, "-m", "core.cli"]


async def acp_relay(tmp_path: Path, *args: str, **tokens: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(*command(), *args, cwd=tmp_path, env=environment(tmp_path, **tokens),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def finished(proc: asyncio.subprocess.Process) -> tuple[int, str, str]:
    async with asyncio.timeout(HANG_GUARD_S):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_acp_relay_run_answers_a_mention_and_stops_cleanly(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        proc = await acp_relay(tmp_path, "run", "--config", str(write_config(tmp_path, fake)))
        try:
            await fake.wait_connected(timeout=HANG_GUARD_S)
            asked = fake.user_message(USER, CHANNEL, f"<@{BOT_USER}> text hello from slack\nsleep 0.2\ntext  done")
            await fake.push(fake.event_envelope({"type": "app_mention", "user": USER, "text": asked.text,
                                                 "ts": asked.ts, "channel": CHANNEL, "team": TEAM}))
            await until(lambda: any("⏱" in m.shown for m in fake.bot_messages(CHANNEL, asked.ts)),
                        timeout=HANG_GUARD_S, what="the answer with its footer")
            await until(lambda: not fake.status_of(CHANNEL, asked.ts), what="the status cleared")
            [answer] = fake.bot_messages(CHANNEL, asked.ts)
            assert answer.shown.startswith("hello from slack done") and answer.stream == "stopped"
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            code, _, err = await finished(proc)
    assert code == 0, err
    assert "acp-relay: stopped cleanly" in err and "Traceback" not in err


async def test_a_bot_token_slack_refuses_exits_2_with_one_sentence(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        proc = await acp_relay(tmp_path, "run", "--config", str(write_config(tmp_path, fake)),
                               SLACK_BOT_TOKEN="xoxb-revoked")
        code, _, err = await finished(proc)
    assert code == 2
    assert ("acp-relay: slack: Slack refused the bot token in $SLACK_BOT_TOKEN (invalid_auth); check "
            "surfaces.slack.bot_token_env\n") in err
    assert "Traceback" not in err and "xoxb-revoked" not in err


async def test_an_app_token_slack_refuses_exits_2_with_one_sentence(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        proc = await acp_relay(tmp_path, "run", "--config", str(write_config(tmp_path, fake)),
                               SLACK_APP_TOKEN="xapp-revoked")
        code, _, err = await finished(proc)
    assert code == 2
    assert "acp-relay: slack: Slack refused the app-level token in $SLACK_APP_TOKEN (invalid_auth)" in err
    assert "Traceback" not in err and "xapp-revoked" not in err


async def test_doctor_asks_slack_whether_the_tokens_work(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        config = str(write_config(tmp_path, fake))
        good = await finished(await acp_relay(tmp_path, "doctor", "--config", config))
        bad = await finished(await acp_relay(tmp_path, "doctor", "--config", config, SLACK_APP_TOKEN="xapp-wrong"))
    code, out, _ = good
    assert code == 0, out
    assert "surface slack: $SLACK_BOT_TOKEN present; auth.test: bot relay in Fake\n" in out
    assert "surface slack: $SLACK_APP_TOKEN present; apps.connections.open: accepted\n" in out
    code, out, _ = bad
    assert code == 1
    assert ("surface slack: $SLACK_APP_TOKEN present, but Slack refused it (apps.connections.open: "
            "invalid_auth)\n") in out
    assert "xapp-wrong" not in out


async def test_doctor_names_a_missing_token(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        config = str(write_config(tmp_path, fake))
        code, out, _ = await finished(await acp_relay(tmp_path, "doctor", "--config", config, SLACK_APP_TOKEN=""))
    assert code == 1
    assert "surface slack: $SLACK_APP_TOKEN MISSING\n" in out


async def test_check_config_names_a_missing_token_by_its_json_path(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        config = str(write_config(tmp_path, fake, mode="http"))
        code, _, err = await finished(await acp_relay(tmp_path, "check-config", "--config", config,
                                                      SLACK_SIGNING_SECRET=""))
    assert code == 2
    assert ("surfaces.slack.signing_secret_env: $SLACK_SIGNING_SECRET is not set (it must hold the app's "
            "signing secret)") in err


async def test_check_config_names_an_allowed_user_that_is_not_a_member_id(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        config = str(write_config(tmp_path, fake, allowed_user_ids=[USER, "@alice"]))
        code, _, err = await finished(await acp_relay(tmp_path, "check-config", "--config", config))
    assert code == 2
    assert ("surfaces.slack.allowed_user_ids[1]: '@alice' is not a Slack member id (like U0123ABCD: a profile's "
            "⋮ menu, Copy member ID)") in err
