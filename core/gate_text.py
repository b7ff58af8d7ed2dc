"""The tool gate's sentences: why a configuration, a mode, an option or a tool call was refused.

Built from the facts an ``AcpToolGateUnroutable`` carries in ``data`` (never from its message):
``agent`` and ``tool_gate`` always; ``program`` (a key of ``PROGRAM_NAMES``) when the agent is one we
know; then ``flag`` or ``env`` with ``path`` (a start-up setting), ``mode`` or ``option`` with
``reason`` (``requested``, ``switched``, ``stuck``), or ``tool`` and ``kind`` with ``reason``
``ran_unasked``. ``core.failures`` renders them for every surface and for ``ask``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HOW_TO_ASK", "PROGRAM_NAMES", "suggests_reset", "tool_gate_prose"]

#: The agents whose ways around the gate are known, by program key (``core.acp.bypass_flags``):
#: their names for a person.
PROGRAM_NAMES: Mapping[str, str] = {
    "kiro": "Kiro CLI", "copilot": "Copilot CLI", "gemini": "Gemini CLI", "qwen": "Qwen Code",
    "opencode": "opencode", "codex": "codex-acp", "claude": "claude-agent-acp",
}

#: How to make each known agent ask before it runs a tool (program keys of ``core.acp.bypass_flags``).
HOW_TO_ASK: Mapping[str, str] = {
    "opencode": 'To make opencode ask, set "permission": {"bash": "ask", "edit": "ask"} in its opencode.json '
                "(or in OPENCODE_CONFIG_CONTENT in agents.{agent}.env).",
    "copilot": "To make Copilot CLI ask, start it without --allow-all-tools, --allow-all, --yolo or --autopilot, "
               "unset COPILOT_ALLOW_ALL, and leave its allow-all setting off.",
    "gemini": "To make Gemini CLI ask, start it without --yolo and with --approval-mode default.",
    "qwen": "To make Qwen Code ask, start it without --yolo and with --approval-mode default.",
    "kiro": "To make Kiro CLI ask, start it without -a, --trust-all-tools or --trust-tools.",
    "claude": "To make claude-agent-acp ask, set permissions.defaultMode to \"default\" in its Claude settings.",
    "codex": "To make codex-acp ask, leave approval_policy at on-request in its config.toml.",
}
_GENERIC_HOW = ("Configure the agent to ask before it runs tools (see its documentation on permissions), or set "
                "agents.{agent}.tool_gate to \"allow\" if you trust it to run tools unasked.")


def _program(data: Mapping[str, Any]) -> str:
    return PROGRAM_NAMES.get(str(data.get("program") or ""), "This agent")


def _gate(data: Mapping[str, Any]) -> str:
    return f"is {data['tool_gate']!r}" if data.get("tool_gate") else "asks for approval or denies tools"


def tool_gate_prose(data: Mapping[str, Any]) -> str:
    """The sentence for one refusal of the tool gate (see the module docstring for ``data``)."""
    agent = data.get("agent") or "<name>"
    key, gate = f"agents.{agent}.tool_gate", _gate(data)
    change = f"or change {key} in the config."
    if data.get("reason") == "ran_unasked":
        tool, kind = str(data.get("tool") or "a tool")[:200], data.get("kind") or "other"
        how = HOW_TO_ASK.get(str(data.get("program") or ""), _GENERIC_HOW).replace("{agent}", agent)
        return (f"The agent ran a tool without asking first ({tool}, {kind}), although {key} {gate}, so this "
                f"answer was stopped. {how}")
    if data.get("env"):
        where = (f"from {data['path']}" if str(data.get("path", "")).startswith(f"agents.{agent}.env")
                 else "from the relay's own environment")
        return (f"{_program(data)} gets {data['env']} {where}, which lets it run tools without "
                f"asking, but {key} {gate}. Remove {data['env']}, {change}")
    if data.get("mode") or data.get("option"):
        return _mode_prose(data, key, gate, change)
    program, flag = _program(data), data.get("flag") or "-a, --trust-all-tools or --trust-tools"
    where = f" ({data['path']})" if data.get("path") else ""
    return (f"{program} is started with {flag}{where}, which lets its tool calls skip approval, but {key} {gate}. "
            f"Remove {flag} from the agent's command, {change}")


def suggests_reset(data: Mapping[str, Any]) -> bool:
    """True when ``tool_gate_prose(data)`` tells the person to start a new conversation (a mode or an
    option the agent could not be moved out of: the session is spoiled)."""
    if data.get("reason") in ("ran_unasked", "requested") or data.get("env"):
        return False
    return bool(data.get("mode") or data.get("option"))


def _mode_prose(data: Mapping[str, Any], key: str, gate: str, change: str) -> str:
    what = (f"mode {data['mode']!r}" if data.get("mode")
            else f"its {data['option']!r} setting")
    reason = data.get("reason")
    if reason == "requested":
        return f"In {what} the agent runs tools without asking, but {key} {gate}, so it was not switched."
    how = "switched itself to" if reason == "switched" else "is in"
    back = "switched back" if data.get("mode") else "turned off"
    return (f"The agent {how} {what}, in which it runs tools without asking, and could not be {back}, so this "
            f"answer was stopped, because {key} {gate}. Start a new conversation, {change}")
