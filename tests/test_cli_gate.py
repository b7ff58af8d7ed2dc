"""The tool gate at the CLI boundary, as real subprocesses: check-config and run refuse start-up settings
that stop an agent asking (exit 2, naming the JSON path), and ``acp-relay ask`` stops a turn whose tool
ran without asking, and switches back an agent that switched itself into a mode that does not ask."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import test_cli
from tests.test_cli import AGENT, methods, no_traceback, run, write_config

env = test_cli.env  # the same fixture: HOME and the state folder in tmp_path, no real agent on PATH

COPILOT_ARGS = ["--acp", "--allow-all-tools"]


def _config(tmp_path: Path, agents: dict[str, Any]) -> Path:
    data = {"agents": agents, "store": {"path": str(tmp_path / "relay.db")},
            "surfaces": {"dashboard": {"enabled": True, "port": 0}}}
    return write_config(tmp_path, data)


@pytest.mark.parametrize(("agent", "path", "setting"), [
    ({"command": "copilot", "args": COPILOT_ARGS}, "agents.bot.args[1]", "--allow-all-tools"),
    ({"command": "npx", "args": ["-y", "@github/copilot", "--acp", "--yolo"]}, "agents.bot.args[3]", "--yolo"),
    ({"command": "copilot", "args": ["--acp"], "env": {"COPILOT_ALLOW_ALL": "true"}},
     "agents.bot.env.COPILOT_ALLOW_ALL", "COPILOT_ALLOW_ALL"),
    ({"command": "gemini", "args": ["--experimental-acp", "--approval-mode=yolo"]}, "agents.bot.args[1]",
     "--approval-mode=yolo"),
    ({"command": "qwen", "args": ["--acp", "--yolo"]}, "agents.bot.args[1]", "--yolo"),
    ({"command": "kiro-cli", "args": ["acp", "-a"]}, "agents.bot.args[1]", "-a"),
], ids=["copilot", "npx-copilot", "copilot-env", "gemini", "qwen", "kiro"])
def test_check_config_refuses_a_bypass_flag_naming_its_json_path(
        tmp_path: Path, env: dict[str, str], agent: dict[str, Any], path: str, setting: str) -> None:
    proc = run(env, "check-config", "--config", str(_config(tmp_path, {"bot": agent})))
    assert proc.returncode == 2, proc.stdout
    assert f"  {path}: " in proc.stderr and setting in proc.stderr
    assert "agents.bot.tool_gate is 'ask'" in proc.stderr
    assert proc.stdout == ""
    no_traceback(proc)


def test_check_config_accepts_the_flag_with_a_gate_of_allow(tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "check-config", "--config",
               str(_config(tmp_path, {"bot": {"command": "copilot", "args": COPILOT_ARGS, "tool_gate": "allow"}})))
    assert proc.returncode == 0, proc.stderr


def test_run_refuses_a_bypass_flag_before_anything_starts(tmp_path: Path, env: dict[str, str]) -> None:
    record = tmp_path / "record.jsonl"
    agents = {"bot": {"command": "copilot", "args": COPILOT_ARGS},
              "fake": {"command": sys.executable, "args": [str(AGENT), "--record", str(record)]}}
    proc = run(env, "run", "--config", str(_config(tmp_path, agents)))
    assert proc.returncode == 2
    assert "acp-relay: agents.bot.args[1]: Copilot CLI is started with --allow-all-tools" in proc.stderr
    assert "dashboard" not in proc.stderr.lower(), "no surface was started"
    assert not methods(record), "no agent was started"
    no_traceback(proc)


def _fake(tmp_path: Path, *flags: str) -> Path:
    args = [str(AGENT), "--record", str(tmp_path / "record.jsonl"), *flags]
    return _config(tmp_path, {"fake": {"command": sys.executable, "args": args, "cwd": str(tmp_path)}})


def test_ask_stops_a_turn_whose_tool_ran_without_asking(tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "ask", "--config", str(_fake(tmp_path, "--agent-name", "opencode")),
               "text working\nrun b1 execute rm -rf build\nhang\ntext never")
    assert proc.returncode == 1
    assert "never" not in proc.stdout
    assert "[tool] rm -rf build (completed)" in proc.stderr  # it ran to the end before it could be stopped
    assert "ran a tool without asking first (rm -rf build, execute)" in proc.stderr
    assert '"permission": {"bash": "ask", "edit": "ask"}' in proc.stderr
    assert "session/cancel" in methods(tmp_path / "record.jsonl")
    no_traceback(proc)


def test_ask_switches_back_an_agent_that_switched_itself_into_auto(tmp_path: Path, env: dict[str, str]) -> None:
    record = tmp_path / "record.jsonl"
    proc = run(env, "ask", "--config", str(_fake(tmp_path)), "mode auto\ntext done")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    frames = [json.loads(line) for line in record.read_text().splitlines()]
    assert [f["params"]["modeId"] for f in frames if f.get("method") == "session/set_mode"] == ["default"]


def test_ask_refuses_the_turn_when_the_agent_cannot_be_switched_back(tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "ask", "--config", str(_fake(tmp_path, "--locked-modes")), "mode yolo\nhang")
    assert proc.returncode == 1
    assert "switched itself to mode 'yolo'" in proc.stderr
    no_traceback(proc)
