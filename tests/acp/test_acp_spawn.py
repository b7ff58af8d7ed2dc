"""Spawning the agent: missing binary, cwd expansion and existence, the trimmed child environment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.acp.client import AcpError
from core.acp.process import child_env
from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.failures import classify

KEPT = {"PATH", "HOME", "USER", "LANG", "TERM", "SHELL"}
# Python itself may add LC_CTYPE to its environment (PEP 538 locale coercion) when LANG is unset.
PYTHON_ADDS = {"LC_CTYPE"}


async def test_missing_binary_names_the_command_and_the_config_key(tmp_path: Path) -> None:
    spec = AgentSpec(name="ghost", command="acp-relay-no-such-agent-xyz", cwd=str(tmp_path))
    with pytest.raises(AcpError) as info:
        await AcpRuntime.start(spec)
    exc = info.value
    assert "acp-relay-no-such-agent-xyz" in str(exc)
    assert "agents.ghost.command" in str(exc)
    assert exc.transient is False
    assert exc.data["kind"] == "agent_missing"
    prose = classify(exc).prose
    assert "Traceback" not in prose and "Traceback" not in str(exc)
    assert "acp-relay-no-such-agent-xyz" in prose


async def test_missing_known_agent_gets_an_install_hint(tmp_path: Path) -> None:
    spec = AgentSpec(name="k", command=str(tmp_path / "bin" / "kiro-cli"), args=("acp",), cwd=str(tmp_path),
                     tool_gate="allow")
    with pytest.raises(AcpError) as info:
        await AcpRuntime.start(spec)
    assert "agents.k.command" in str(info.value)
    assert "kiro.dev" in info.value.data["hint"]


async def test_cwd_tilde_is_expanded(start, agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    dump = tmp_path / "env.json"
    rt = await start(agent("--env-dump", str(dump), cwd="~/project"))
    assert rt.cwd == str((home / "project").resolve())
    assert json.loads(dump.read_text())["cwd"] == str((home / "project").resolve())


async def test_cwd_must_exist(agent, tmp_path: Path) -> None:
    spec = agent(cwd=str(tmp_path / "nowhere"))
    with pytest.raises(AcpError) as info:
        await AcpRuntime.start(spec)
    assert info.value.data["kind"] == "cwd_missing"
    assert "agents.fake.cwd" in str(info.value)
    assert str(tmp_path / "nowhere") in str(info.value)


async def test_child_env_is_trimmed(start, agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_RELAY_CANARY", "must-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("LANG", "C.UTF-8")
    dump = tmp_path / "env.json"
    await start(agent("--env-dump", str(dump), env={"AGENT_ONLY": "yes"}))
    env = json.loads(dump.read_text())["env"]
    assert "ACP_RELAY_CANARY" not in env
    assert "ANTHROPIC_API_KEY" not in env
    assert env["AGENT_ONLY"] == "yes"
    assert env["XDG_CONFIG_HOME"] == str(tmp_path / "xdg")
    assert env["LANG"] == "C.UTF-8"
    assert env["PATH"] == os.environ["PATH"]
    unexpected = {k for k in env if k not in KEPT | PYTHON_ADDS | {"AGENT_ONLY"} and not k.startswith("XDG_")}
    assert unexpected == set()


def test_spec_env_wins_over_ours(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", "/ours")
    spec = AgentSpec(name="x", command="x", env={"PATH": "/agent"}, cwd=str(tmp_path))
    assert child_env(spec)["PATH"] == "/agent"
