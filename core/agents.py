"""Which agent to run: the configured one, or the embedded default (first found on PATH, else demo)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

from core.acp.spec import AgentSpec
from core.acp.tool_gate import spawn_bypasses, unroutable
from core.config import BUILTIN_AGENT_NAMES, AgentConfig, ConfigError, RelayConfig
from core.failures import classify

__all__ = ["BUILTIN_AGENTS", "agent_spec", "choose_agent", "chosen_spec", "gate_problems", "resolve_command"]

_BUILTIN_CONFIGS: dict[str, AgentConfig] = {
    "kiro": AgentConfig(command="kiro-cli", args=["acp"], backend="kiro"),
    "claude": AgentConfig(command="claude-agent-acp", backend="claude"),
    "codex": AgentConfig(command="codex-acp", backend="codex"),
    # The demo speaks Kiro's extension frames so it can show a structured refusal card.
    "demo": AgentConfig(command="acp-relay", args=["demo-agent"], backend="kiro"),
}
#: Tried in this order when the config names no default agent (``make run`` on a fresh machine).
#: Keyed and ordered by ``config.BUILTIN_AGENT_NAMES``, which validates ``default_agent``: a name
#: there without a config here fails at import, never later as a KeyError.
BUILTIN_AGENTS: dict[str, AgentConfig] = {name: _BUILTIN_CONFIGS[name] for name in BUILTIN_AGENT_NAMES}


class _ThisRound:
    """What ``resolve_command`` found in the round of the event loop running now."""

    loop: asyncio.AbstractEventLoop | None = None
    found: dict[tuple[str, str | None], str | None] = {}


def resolve_command(command: str) -> str | None:
    """``shutil.which``, plus our own console script next to this interpreter (an unactivated venv).

    Looked up once a round of the event loop: in a burst every new conversation's first turn resolves
    its agent's command before its prompt is sent (a PATH search: 15-80 us of system calls each), all
    in the same round. The next round looks again, so a command installed or removed meanwhile is seen.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _look_up(command)
    if _ThisRound.loop is not loop:
        _ThisRound.loop, _ThisRound.found = loop, {}
    found, key = _ThisRound.found, (command, os.environ.get("PATH"))
    if key not in found:
        if not found:
            loop.call_soon(found.clear)  # this round's lookups, forgotten when the next one begins
        found[key] = _look_up(command)
    return found[key]


def _look_up(command: str) -> str | None:
    found = shutil.which(command)
    if found is None and command == "acp-relay":
        sibling = Path(sys.executable).with_name("acp-relay")
        found = str(sibling) if sibling.exists() else None
    return found


def choose_agent(config: RelayConfig, name: str | None = None) -> tuple[str, AgentConfig]:
    """The agent to use: ``name``, else ``default_agent``, else the first configured (or built-in)
    agent whose command is on PATH. The demo agent stands in only when no agent is configured;
    a configured agent that is missing is never silently replaced."""
    chosen, agent, _ = _choose(config, name)
    return chosen, agent


def chosen_spec(config: RelayConfig, name: str | None = None, cwd: str | None = None) -> tuple[str, AgentSpec]:
    """``choose_agent``, and its ``agent_spec`` in ``cwd``: a command the choice found on PATH is not
    looked up a second time (a new conversation's first turn makes both, before its prompt is sent)."""
    chosen, agent, found = _choose(config, name)
    return chosen, _spec(chosen, agent, cwd, found or resolve_command(agent.command))


def _choose(config: RelayConfig, name: str | None) -> tuple[str, AgentConfig, str | None]:
    """``choose_agent``, and the command's path when the choice looked it up on PATH (else None)."""
    agents = config.agents or BUILTIN_AGENTS
    if name is not None:
        if name not in agents:
            known = ", ".join(agents)
            raise ConfigError(None, [(f"agents.{name}", f"no such agent (known: {known})")])
        return name, agents[name], None
    if config.default_agent is not None:
        return config.default_agent, agents[config.default_agent], None
    for candidate, agent in agents.items():
        if (found := resolve_command(agent.command)) is not None:
            return candidate, agent, found
    if config.agents:  # the operator chose these: spawning the first says clearly what is missing
        first, agent = next(iter(config.agents.items()))
        return first, agent, None
    return "demo", BUILTIN_AGENTS["demo"], None


def agent_spec(name: str, agent: AgentConfig, cwd: str | None = None) -> AgentSpec:
    """The runtime's view of a configured agent: the command resolved on PATH, ``cwd`` overriding the agent's."""
    return _spec(name, agent, cwd, resolve_command(agent.command))


def _spec(name: str, agent: AgentConfig, cwd: str | None, found: str | None) -> AgentSpec:
    return AgentSpec(name=name, command=found or agent.command, args=tuple(agent.args), env=dict(agent.env),
                     cwd=cwd or agent.cwd, backend=agent.backend or "", tool_gate=agent.tool_gate)


def gate_problems(config: RelayConfig) -> list[tuple[str, str]]:
    """Configured agents started so that they run tools without asking although their ``tool_gate``
    asks or denies: (JSON path, the sentence an agent's start would say), for check-config and run."""
    problems: list[tuple[str, str]] = []
    for name, agent in config.agents.items():
        spec = agent_spec(name, agent)
        problems += [(found.path, classify(unroutable(spec, found)).prose) for found in spawn_bypasses(spec)]
    return problems
