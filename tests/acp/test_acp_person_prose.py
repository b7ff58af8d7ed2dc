"""What an agent says about a refusal or a missing login reaches a person in the relay's own terms:
no surface command but /compact, no secret, no path of this machine."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from core.acp._dispatch import parse_refusal, refusal_from_error
from core.acp.client import AcpAuthRequired, AcpError
from core.acp.process import AgentProcess
from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.engine.wording import refusal_card_text
from core.failures import classify

FAKE_AGENT = Path(__file__).resolve().parents[1] / "fakes" / "acp_agent.py"
COMMAND = re.compile(r"(?<![\w.:/~-])[/!]([A-Za-z][\w-]*)")
# claude-agent-acp 0.23.1's usage-policy refusal, as its -32603 message (docs/acp-facts.md).
CLAUDE_023_REFUSAL = (
    "Internal error: API Error: Claude Code is unable to respond to this request, which appears to violate "
    "our Usage Policy (https://www.anthropic.com/legal/aup). Please double press esc to edit your last "
    "message or start a new session for Claude Code to assist with a different task. If you are seeing "
    "this refusal repeatedly, try running /model claude-sonnet-4-20250514 to switch models."
)


def test_claude_023_refusal_names_no_command_and_keeps_the_bare_model_id() -> None:
    info = refusal_from_error(CLAUDE_023_REFUSAL)
    assert info.recommended_model == "claude-sonnet-4-20250514"
    assert "Usage Policy" in info.explanation
    assert "the agent's model command claude-sonnet-4-20250514" in info.explanation
    assert "esc" not in info.explanation
    assert not COMMAND.findall(info.explanation), info.explanation


def test_kiro_refusal_explanation_names_no_command_and_no_secret() -> None:
    params = {"stopReason": "CONTENT_FILTERED", "refusal": {
        "category": "policy", "recommendedModel": "auto",
        "explanation": "Blocked. Use /model or !new to continue; key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx"}}
    info = parse_refusal(params, "kiro")
    assert info is not None and info.recommended_model == "auto"
    assert info.explanation == ("Blocked. Use the agent's model command or the agent's new command to continue; "
                                "key sk-ant-[redacted]")


async def test_not_logged_in_kiro_at_an_absolute_path_is_told_what_to_run(tmp_path: Path) -> None:
    """Kiro resolved on PATH is an absolute path; the person is told `kiro-cli login`, never the path."""
    kiro = tmp_path / "bin" / "kiro-cli"
    kiro.parent.mkdir()
    kiro.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_AGENT} \"$@\"\n", encoding="utf-8")
    kiro.chmod(0o755)
    spec = AgentSpec(name="kiro", command=str(kiro), args=("--not-logged-in",), env={}, cwd=str(tmp_path),
                     backend="", tool_gate="ask")
    with pytest.raises(AcpAuthRequired) as info:
        async with asyncio.timeout(30):
            await AcpRuntime.start(spec)
    assert info.value.command == "kiro-cli login"
    for backend in ("generic", "kiro"):  # the engine words it before it knows the backend
        prose = classify(info.value, backend=backend).prose
        assert "kiro-cli login" in prose and "not signed in" in prose
        assert str(tmp_path) not in prose and "/bin/" not in prose


def test_auth_prose_says_what_to_run_when_the_agent_did_not() -> None:
    exc = AcpAuthRequired("x", agent_line="Authentication required", command="kiro-cli login")
    assert classify(exc).prose == (
        "The agent is not signed in. Run kiro-cli login on the machine where the relay runs.")


def test_refusal_card_describes_commands_whoever_built_the_info() -> None:
    from core.acp.types import RefusalInfo

    card = refusal_card_text(RefusalInfo("policy", "Try /new or !new, or /compact.", "model-b"))
    assert card.splitlines()[1:] == [
        "Category: policy",
        "Why: Try the agent's new command or the agent's new command, or /compact.",
        "Suggested model: model-b",
    ]


async def test_a_missing_claude_agent_is_installed_under_its_current_npm_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.acp.client import AcpError
    from core.acp.process import AgentProcess

    monkeypatch.setenv("PATH", str(tmp_path))  # nothing is found
    spec = AgentSpec(name="claude", command="claude-agent-acp", args=(), env={}, cwd=str(tmp_path),
                     backend="claude", tool_gate="ask")
    with pytest.raises(AcpError) as info:
        await AgentProcess.spawn(spec)
    prose = classify(info.value, backend="claude").prose
    assert "npm install -g @agentclientprotocol/claude-agent-acp" in prose
    assert "@zed-industries/claude-agent-acp" in prose  # the older name people may still have


async def test_a_missing_codex_agent_is_installed_under_its_current_npm_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing is found
    spec = AgentSpec(name="codex", command="codex-acp", args=(), env={}, cwd=str(tmp_path),
                     backend="codex", tool_gate="ask")
    with pytest.raises(AcpError) as info:
        await AgentProcess.spawn(spec)
    prose = classify(info.value, backend="codex").prose
    assert "npm install -g @agentclientprotocol/codex-acp" in prose
    assert "@zed-industries/codex-acp" in prose  # the older name people may still have
