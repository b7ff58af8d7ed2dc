"""What the runtime needs to know about one configured agent."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["AgentSpec", "detect_backend", "resolve_cwd"]


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


def detect_backend(command: str, args: tuple[str, ...] = (), agent_name: str = "") -> str:
    """Backend from the command name (and, once known, the agent's ``agentInfo.name``)."""
    haystack = " ".join((Path(command).name, *args[:1], agent_name)).lower()
    for backend, marker in (("kiro", "kiro"), ("claude", "claude"), ("codex", "codex")):
        if marker in haystack:
            return backend
    return "generic"
