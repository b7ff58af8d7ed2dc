"""What stops an agent asking: its modes, its config options, and a tool call that ran unasked.

With a gate of ``ask`` or ``deny`` every side-effecting tool call must reach the person as a
permission request. Agents have many ways around that; this module names them, so the session can
switch back (or refuse the turn) and stop a turn whose tool ran without a request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.acp._dispatch import dicts
from core.acp.types import ToolCall

__all__ = [
    "READ_ONLY_KINDS",
    "UNASKED_GRACE_S",
    "asking_mode",
    "asking_value",
    "may_run_unasked",
    "mode_bypasses",
    "option_bypasses",
    "ran_unasked",
    "select_values",
]

#: Modes (lower case, without "-" and "_") in which agents run tools without asking the person:
#: claude-agent-acp's bypassPermissions, acceptEdits, dontAsk and auto (its own classifier decides),
#: codex-acp's full-access presets, gemini-cli's and qwen-code's yolo, autoEdit / auto-edit and auto,
#: Copilot CLI's autopilot (a URL ending ``#autopilot``).
_BYPASS = frozenset({"auto", "bypasspermissions", "acceptedits", "dontask", "fullaccess", "agentfullaccess",
                     "yolo", "autoedit", "autopilot"})
#: A backend's own such modes, whose names mean something else elsewhere. codex-acp 2.x starts in
#: "agent" (auto review): a second model call, not the person, approves or denies each tool call
#: (Copilot's "#agent" is its ordinary, asking mode).
_BACKEND_BYPASS = {"codex": frozenset({"agent"})}
#: Where to go instead, in order of preference (claude, gemini, qwen: default; Copilot: #agent;
#: codex: read-only).
_ASKING = ("default", "agent", "readonly")
#: Config option values that switch a ``permissions`` option on (Copilot's ``allow_all``), and off.
_ON = frozenset({"on", "true", "yes", "enabled", "1", "allow", "always"})
_OFF = ("off", "false", "no", "disabled", "0", "ask", "default")
#: How long a call marked in_progress may go without a permission request before it counts as
#: running unasked (agents that mark a call in_progress first ask within milliseconds; a loaded
#: machine has delayed that past 2 s). A call reported completed without one stops the turn at once.
UNASKED_GRACE_S = 5.0
#: Tool kinds that change nothing: they may run without a permission request.
READ_ONLY_KINDS = frozenset({"read", "search", "think"})


def _word(mode_id: str) -> str:
    """``https://…/session-modes#autopilot`` -> ``autopilot``; ``bypassPermissions`` -> ``bypasspermissions``."""
    return mode_id.rsplit("#", 1)[-1].lower().replace("-", "").replace("_", "")


def mode_bypasses(mode_id: str | None, backend: str = "generic") -> bool:
    """True for a mode in which this agent runs tools without asking the person."""
    if not mode_id:
        return False
    return _word(mode_id) in _BYPASS or mode_id in _BACKEND_BYPASS.get(backend, frozenset())


def asking_mode(modes: Iterable[str], backend: str = "generic") -> str | None:
    """The mode to switch back to: the first of default, agent, read-only this agent offers (and asks in)."""
    offered = [m for m in modes if not mode_bypasses(m, backend)]
    for wanted in _ASKING:
        found = next((m for m in offered if _word(m) == wanted), None)
        if found is not None:
            return found
    return None


def select_values(options: Any) -> list[dict[str, Any]]:
    """A select's values, flat or grouped under headers (schema: SessionConfigSelectGroup)."""
    flat: list[dict[str, Any]] = []
    for item in dicts(options):
        flat.extend(dicts(item["options"]) if "group" in item and "value" not in item else [item])
    return flat


def _values(option: Mapping[str, Any]) -> list[Any]:
    """The values an option can take: a select's, or a boolean's two."""
    if option.get("type") == "boolean" or isinstance(option.get("currentValue"), bool):
        return [False, True]
    return [item.get("value") for item in select_values(option.get("options"))]


def _is_on(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in _ON)


def option_bypasses(option: Mapping[str, Any], backend: str = "generic") -> bool:
    """True for a config option set so that the agent stops asking: a ``permissions`` option switched
    on (Copilot's ``allow_all``), or a ``mode`` option on a mode that does not ask."""
    category, value = option.get("category"), option.get("currentValue")
    if category == "permissions":
        return _is_on(value) or (isinstance(value, str) and mode_bypasses(value, backend))
    return category == "mode" and isinstance(value, str) and mode_bypasses(value, backend)


def asking_value(option: Mapping[str, Any], backend: str = "generic") -> Any:
    """The value that makes this option ask again (``off``, an asking mode), or None when it has none."""
    values = _values(option)
    if option.get("category") == "mode":
        return asking_mode([v for v in values if isinstance(v, str)], backend)
    if False in values:
        return False
    lowered = {v.lower(): v for v in values if isinstance(v, str)}
    return next((lowered[w] for w in _OFF if w in lowered), None)


def ran_unasked(call: ToolCall, asked: bool) -> bool:
    """A side-effecting tool call that has run although no permission request came for it: it reached
    ``completed``. A missing kind is ``other``, which is side-effecting."""
    if asked or (call.kind or "other") in READ_ONLY_KINDS:
        return False
    return call.status == "completed"


def may_run_unasked(call: ToolCall, asked: bool) -> bool:
    """A side-effecting tool call marked ``in_progress`` with no permission request yet.

    Not proof on its own: codex-acp 2.x announces a command as in_progress and opencode moves a call
    from pending to in_progress, each THEN asking for it. The session gives such a call
    ``UNASKED_GRACE_S`` to be asked for before it counts as running unasked.
    """
    if asked or (call.kind or "other") in READ_ONLY_KINDS:
        return False
    return call.status == "in_progress"
