"""What the runtime needs to know about one configured agent."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["AgentSpec", "bare_name", "detect_backend", "resolve_cwd"]


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent from ``agents.<name>`` in the config. ``backend`` empty means detect."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "."
    backend: str = ""
    tool_gate: str = "ask"

    def expanded_cwd(self) -> Path:
        """``cwd`` resolved as the agent will run in it (see :func:`resolve_cwd`)."""
        return resolve_cwd(self.cwd)

    def with_cwd(self, cwd: str) -> AgentSpec:
        """A copy of this spec that runs in ``cwd`` instead."""
        return replace(self, cwd=cwd, env=dict(self.env))


def resolve_cwd(cwd: str) -> Path:
    """A configured folder with ``~`` and environment variables expanded, made absolute: the one
    spelling the pool keys runtimes by and the runtime compares against."""
    return Path(os.path.expandvars(os.path.expanduser(cwd))).resolve()


#: The npm packages (their unscoped names) and programs of each backend; ``agentInfo.name`` is one
#: of these too: "@agentclientprotocol/claude-agent-acp" (0.101), "@zed-industries/claude-agent-acp"
#: (0.23), "@agentclientprotocol/codex-acp" (2.x), "codex-acp" (the Rust 0.16), "kiro-cli",
#: "Copilot" (Copilot CLI), "qwen-code", "OpenCode", "gemini-cli".
_KNOWN_NAMES = {
    "claude-agent-acp": "claude",
    "claude-code-acp": "claude",
    "codex-acp": "codex",
    "kiro-cli": "kiro",
    "copilot": "copilot",
    "qwen-code": "qwen",
    "qwen": "qwen",
    "opencode": "opencode",
    "opencode-ai": "opencode",
    "gemini-cli": "gemini",
    "gemini": "gemini",
}
_MARKERS = (("kiro", "kiro"), ("claude", "claude"), ("codex", "codex"), ("copilot", "copilot"),
            ("qwen", "qwen"), ("opencode", "opencode"), ("gemini", "gemini"))
_RE_PACKAGE = re.compile(r"(?:^|/)node_modules/((?:@[^/]+/)?[^/]+)")
_RE_EXTENSION = re.compile(r"\.(?:exe|cmd|js|mjs|cjs)$", re.I)


def bare_name(word: str) -> str:
    """A program, a path or a package spec -> the bare package or program name: npx's
    "@agentclientprotocol/codex-acp@2.6.0", ".../node_modules/@scope/x/dist/index.js", "x.exe"."""
    word = word.strip().replace("\\", "/")
    if match := _RE_PACKAGE.search(word):
        word = match.group(1)  # the package a script inside node_modules belongs to
    name = word.rsplit("/", 1)[-1].split("@", 1)[0]  # no directory or scope, no version
    return _RE_EXTENSION.sub("", name).lower()


def detect_backend(command: str, args: tuple[str, ...] = (), agent_name: str = "") -> str:
    """Backend from the agent's ``agentInfo.name`` once known, else from its command line.

    The command's program, and the first argument that is no option (``node <path>``,
    ``npx -y <package>``), are read as package or program names; a known one decides. Failing that,
    a backend's name inside those words does (``kiro-cli-chat``), else ``generic``.
    """
    words = [command, next((a for a in args if not a.startswith("-")), "")]
    for word in (agent_name, *words):
        if word and (backend := _KNOWN_NAMES.get(bare_name(word))):
            return backend
    haystack = " ".join((*(bare_name(w) for w in words if w), agent_name)).lower()
    for backend, marker in _MARKERS:
        if marker in haystack:
            return backend
    return "generic"
