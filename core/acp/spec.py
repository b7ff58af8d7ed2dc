"""What the runtime needs to know about one configured agent."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BACKENDS", "AgentSpec", "detect_backend"]

BACKENDS = ("kiro", "claude", "codex", "generic")


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
        """``cwd`` with ``~`` and environment variables expanded, made absolute."""
        return Path(os.path.expandvars(os.path.expanduser(self.cwd))).resolve()

    def with_cwd(self, cwd: str) -> AgentSpec:
        """A copy of this spec that runs in ``cwd`` instead."""
        return AgentSpec(self.name, self.command, self.args, dict(self.env), cwd, self.backend, self.tool_gate)


def detect_backend(command: str, args: tuple[str, ...] = (), agent_name: str = "") -> str:
    """Backend from the command name (and, once known, the agent's ``agentInfo.name``)."""
    haystack = " ".join((Path(command).name, *args[:1], agent_name)).lower()
    for backend, marker in (("kiro", "kiro"), ("claude", "claude"), ("codex", "codex")):
        if marker in haystack:
            return backend
    return "generic"
