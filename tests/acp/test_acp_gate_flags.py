"""Before spawning, a gate of ask or deny refuses every known flag or variable that stops an agent asking:
Kiro's trust flags, Copilot CLI's allow-all family and COPILOT_ALLOW_ALL, gemini's and qwen's yolo and
approval modes, opencode's --auto, codex's approval_policy=never."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.acp.client import AcpToolGateUnroutable
from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.acp.tool_gate import spawn_bypasses
from core.failures import classify

NODE_COPILOT = "/opt/lib/node_modules/@github/copilot/index.js"

REFUSED = [  # (command, args, the refused setting, its index in args, program name in the sentence)
    ("copilot", ("--acp", "--allow-all-tools"), "--allow-all-tools", 1, "Copilot CLI"),
    ("copilot", ("--acp", "--allow-all"), "--allow-all", 1, "Copilot CLI"),
    ("copilot", ("--acp", "--yolo"), "--yolo", 1, "Copilot CLI"),
    ("copilot", ("--acp", "--autopilot"), "--autopilot", 1, "Copilot CLI"),
    ("copilot", ("--acp", "--allow-tool=shell(git)"), "--allow-tool=shell(git)", 1, "Copilot CLI"),
    ("npx", ("-y", "@github/copilot@1.0.102", "--acp", "--yolo"), "--yolo", 3, "Copilot CLI"),
    ("node", (NODE_COPILOT, "--acp", "--allow-all-tools"), "--allow-all-tools", 2, "Copilot CLI"),
    ("gemini", ("--experimental-acp", "--yolo"), "--yolo", 1, "Gemini CLI"),
    ("gemini", ("--experimental-acp", "-y"), "-y", 1, "Gemini CLI"),
    ("gemini", ("--experimental-acp", "--approval-mode", "yolo"), "--approval-mode", 1, "Gemini CLI"),
    ("gemini", ("--experimental-acp", "--approval-mode=yolo"), "--approval-mode=yolo", 1, "Gemini CLI"),
    ("gemini", ("--experimental-acp", "--approval-mode=auto_edit"), "--approval-mode=auto_edit", 1, "Gemini CLI"),
    ("npx", ("@google/gemini-cli", "--experimental-acp", "--yolo"), "--yolo", 2, "Gemini CLI"),
    ("qwen", ("--acp", "--yolo"), "--yolo", 1, "Qwen Code"),
    ("qwen", ("--acp", "--approval-mode", "yolo"), "--approval-mode", 1, "Qwen Code"),
    ("opencode", ("acp", "--auto"), "--auto", 1, "opencode"),
    ("codex-acp", ("-c", "approval_policy=never"), "-c", 0, "codex-acp"),
    ("kiro-cli", ("acp", "--trust-all-tools"), "--trust-all-tools", 1, "Kiro CLI"),
]


def _spec(tmp_path: Path, command: str, args: tuple[str, ...], gate: str = "ask", **env: str) -> AgentSpec:
    # The command is a path that does not exist: the refusal (not "not found") proves nothing was spawned.
    program = command if "/" in command else str(tmp_path / command)
    return AgentSpec(name="bot", command=program, args=args, env=env, cwd=str(tmp_path), tool_gate=gate)


@pytest.mark.parametrize("gate", ["ask", "deny"])
@pytest.mark.parametrize(("command", "args", "setting", "index", "program"), REFUSED,
                         ids=[f"{c}-{s}" for c, _, s, _, _ in REFUSED])
async def test_a_known_bypass_flag_is_refused_before_spawning(
        tmp_path: Path, gate: str, command: str, args: tuple[str, ...], setting: str, index: int,
        program: str) -> None:
    with pytest.raises(AcpToolGateUnroutable) as info:
        await AcpRuntime.start(_spec(tmp_path, command, args, gate))
    exc = info.value
    assert exc.data["flag"] == setting and exc.data["path"] == f"agents.bot.args[{index}]"
    verdict = classify(exc)
    assert verdict.kind == "tool_gate" and verdict.transient is False
    assert program in verdict.prose and setting in verdict.prose
    assert f"agents.bot.tool_gate is '{gate}'" in verdict.prose


@pytest.mark.parametrize("value", ["true", "1", "YES", "on"])
async def test_copilot_allow_all_in_the_agents_env_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(AcpToolGateUnroutable) as info:
        await AcpRuntime.start(_spec(tmp_path, "copilot", ("--acp",), COPILOT_ALLOW_ALL=value))
    assert info.value.data["env"] == "COPILOT_ALLOW_ALL"
    assert info.value.data["path"] == "agents.bot.env.COPILOT_ALLOW_ALL"
    prose = classify(info.value).prose
    assert "Copilot CLI gets COPILOT_ALLOW_ALL from agents.bot.env.COPILOT_ALLOW_ALL" in prose
    assert value not in prose.split("COPILOT_ALLOW_ALL")[0]


@pytest.mark.parametrize(("command", "args", "env"), [
    ("copilot", ("--acp",), {"COPILOT_ALLOW_ALL": "false"}),
    ("copilot", ("--acp", "--allow-all-paths"), {}),  # paths, not approvals
    ("npx", ("-y", "@google/gemini-cli", "--experimental-acp"), {}),  # -y is npx's own
    ("gemini", ("--experimental-acp", "--approval-mode", "default"), {}),
    ("qwen", ("--acp", "--approval-mode=plan"), {}),
    ("some-agent", ("--yolo", "-a"), {}),  # an agent we do not know: the backstop guards it
    ("codex-acp", ("-c", "approval_policy=on-request"), {}),
])
def test_settings_that_keep_asking_are_not_refused(tmp_path: Path, command: str, args: tuple[str, ...],
                                                   env: dict[str, str]) -> None:
    assert spawn_bypasses(_spec(tmp_path, command, args, **env)) == []


def test_with_a_gate_of_allow_nothing_is_refused(tmp_path: Path) -> None:
    assert spawn_bypasses(_spec(tmp_path, "copilot", ("--yolo",), "allow", COPILOT_ALLOW_ALL="1")) == []


def test_the_relays_own_copilot_allow_all_never_reaches_the_agent(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The agent's environment is trimmed (PATH, HOME...): the relay's own setting is not inherited.
    monkeypatch.setenv("COPILOT_ALLOW_ALL", "true")
    assert spawn_bypasses(_spec(tmp_path, "copilot", ("--acp",))) == []


def test_every_bypass_is_listed_with_its_json_path(tmp_path: Path) -> None:
    found = spawn_bypasses(_spec(tmp_path, "copilot", ("--acp", "--yolo", "--allow-all-tools"), COPILOT_ALLOW_ALL="1"))
    assert [(b.setting, b.path) for b in found] == [
        ("--yolo", "agents.bot.args[1]"), ("--allow-all-tools", "agents.bot.args[2]"),
        ("COPILOT_ALLOW_ALL", "agents.bot.env.COPILOT_ALLOW_ALL")]
