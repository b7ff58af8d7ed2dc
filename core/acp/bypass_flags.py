"""Start-up settings that make an agent run tools without asking: its flags and its environment.

Read before spawning, so a gate of ``ask`` or ``deny`` refuses them with a sentence naming the
agent, the setting and the config key. The program is recognised from its command line (the command,
``npx <package>``, ``node …/node_modules/<package>/…``), or from the configured backend, or from
``agentInfo.name`` once the agent has answered; only the program's own arguments are read (``npx -y``
is npx's, not gemini's ``-y``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.acp.gate_modes import mode_bypasses
from core.acp.spec import bare_name
from core.gate_text import PROGRAM_NAMES

__all__ = ["Bypass", "launch_bypasses", "program_of"]

#: Bare program and package names (see ``spec.bare_name``) -> program key.
_NAMES = {
    "kiro-cli": "kiro", "kiro-cli-chat": "kiro", "copilot": "copilot", "gemini": "gemini", "gemini-cli": "gemini",
    "qwen": "qwen", "qwen-code": "qwen", "opencode": "opencode", "opencode-ai": "opencode", "codex-acp": "codex",
    "claude-agent-acp": "claude", "claude-code-acp": "claude",
}
#: Flags that alone stop the program asking (``--flag`` or ``--flag=value`` alike).
_FLAGS: Mapping[str, frozenset[str]] = {
    "kiro": frozenset({"-a", "--trust-all-tools", "--trust-tools"}),
    # --allow-tool / --allow-url let the named tools or URLs run unasked; --yolo is --allow-all.
    "copilot": frozenset({"--allow-all-tools", "--allow-all", "--yolo", "--autopilot", "--allow-tool",
                          "--allow-all-urls", "--allow-url"}),
    "gemini": frozenset({"-y", "--yolo"}),
    "qwen": frozenset({"-y", "--yolo"}),
    "opencode": frozenset({"--auto"}),
}
#: Flags whose value names an approval mode (``--approval-mode yolo``, ``--approval-mode=auto_edit``).
_MODE_FLAGS: Mapping[str, str] = {"gemini": "--approval-mode", "qwen": "--approval-mode"}
#: codex's config overrides (``-c approval_policy=never``): a policy that never asks.
_CODEX_OVERRIDE = ("-c", "--config")
#: Environment variables that stop the program asking when switched on.
_ENV: Mapping[str, tuple[str, ...]] = {"copilot": ("COPILOT_ALLOW_ALL",)}
_ON = frozenset({"true", "1", "yes", "on", "y"})  # Copilot's reading of COPILOT_ALLOW_ALL


@dataclass(frozen=True, slots=True)
class Bypass:
    """One setting that lets tools run unasked: ``setting`` as written, ``path`` its JSON path."""

    program: str
    setting: str
    path: str
    env: bool = False


def program_of(command: str, args: Sequence[str], backend: str = "", agent_name: str = "") -> tuple[str, int]:
    """The program key and the index in ``args`` where its own arguments start (``""`` when unknown)."""
    for i, word in enumerate((command, *args)):
        if not word.startswith("-") and (found := _NAMES.get(bare_name(word))):
            return found, i
    for name in (backend, _NAMES.get(bare_name(agent_name), "") if agent_name else ""):
        if name in PROGRAM_NAMES:
            return name, 0
    return "", 0


def _flag_bypass(program: str, arg: str, following: str) -> bool:
    flag, eq, value = arg.partition("=")
    if flag in _FLAGS.get(program, ()):
        return True
    if flag == _MODE_FLAGS.get(program):
        return mode_bypasses(value if eq else following, program)
    if program == "codex" and (flag in _CODEX_OVERRIDE or arg.startswith("-c")):
        setting = (value if eq else following) if flag in _CODEX_OVERRIDE else arg[2:]
        key, _, policy = setting.partition("=")
        return key.strip() == "approval_policy" and policy.strip().strip("'\"") == "never"
    return False


def launch_bypasses(name: str, command: str, args: Sequence[str], env: Mapping[str, str], *,
                    configured_env: Mapping[str, str], backend: str = "") -> list[Bypass]:
    """Every flag and variable that lets agent ``name`` run tools without asking, in order.

    ``env`` is the environment the agent will get; ``configured_env`` its ``agents.<name>.env``, so a
    variable that comes from the relay's own environment is named as such.
    """
    program, start = program_of(command, args, backend)
    if not program:
        return []
    found: list[Bypass] = []
    for i in range(start, len(args)):
        following = args[i + 1] if i + 1 < len(args) else ""
        if _flag_bypass(program, args[i], following):
            found.append(Bypass(program, args[i], f"agents.{name}.args[{i}]"))
    for var in _ENV.get(program, ()):
        if env.get(var, "").strip().lower() in _ON:
            where = f"agents.{name}.env.{var}" if var in configured_env else f"agents.{name}.tool_gate"
            found.append(Bypass(program, var, where, env=True))
    return found
