"""Moving a session: reattaching one the agent keeps, and switching its mode or a select option.

A person picks these from the chat (the sessions list, the mode command). Reattaching prefers
``session/resume`` (nothing replayed) to ``session/load`` (the history replays as updates, which the
session counts and never shows). A mode is either an ACP mode id or a select config option's
``configId=value`` (a thought level, an effort); the model has its own command. With a tool gate of
``ask`` or ``deny``, a choice that would stop the agent asking is refused before it reaches the agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.acp.client import AcpToolGateUnroutable
from core.acp.gate_modes import mode_bypasses, option_bypasses, select_values
from core.acp.runtime import AcpRuntime
from core.acp.session import AcpSession

__all__ = ["ModeChoice", "apply_mode", "find_mode", "mode_choices", "reattach"]

#: Config option categories a person switches with the model command instead (or never, from a chat).
_NOT_A_MODE = frozenset({"model", "permissions"})


async def reattach(runtime: AcpRuntime, session_id: str, meta: dict[str, Any]) -> AcpSession:
    """The agent's session ``session_id`` on ``runtime``: resumed where offered, else loaded."""
    live = runtime.sessions.get(session_id)
    if live is not None:
        return live
    if runtime.resume_supported:
        return await runtime.resume_session(session_id)
    return await runtime.load_session(session_id, meta=meta or None)


@dataclass(frozen=True, slots=True)
class ModeChoice:
    """One thing the mode command offers: ``value`` is a mode id or ``configId=value``; ``current``
    when the session is in it; ``refused`` when the tool gate forbids it (it stops the agent asking)."""

    label: str
    value: str
    current: bool = False
    refused: bool = False


def mode_choices(session: AcpSession) -> list[ModeChoice]:
    """The session's modes, then the values of its select options other than the model."""
    gate, backend = session.runtime.spec.tool_gate, session.runtime.backend
    out = [ModeChoice(session.mode_names.get(m, m), m, m == session.current_mode,
                      gate != "allow" and mode_bypasses(m, backend)) for m in session.modes]
    for option in session.config_options.values():
        if option.get("category") in _NOT_A_MODE or option.get("type", "select") != "select":
            continue
        if session.modes and option.get("category") == "mode":
            continue  # the same modes again, as an option
        name = str(option.get("name") or option.get("id"))
        for value in select_values(option.get("options")):
            raw = value.get("value")
            if not isinstance(raw, str):
                continue
            refused = gate != "allow" and option_bypasses({**option, "currentValue": raw}, backend)
            out.append(ModeChoice(f"{name}: {value.get('name') or raw}", f"{option.get('id')}={raw}",
                                  raw == option.get("currentValue"), refused))
    return out


def find_mode(session: AcpSession, wanted: str) -> ModeChoice | None:
    """The choice a person named: by value, or by its label or the mode's name (case ignored)."""
    folded = wanted.strip().casefold()
    for choice in mode_choices(session):
        if folded in (choice.value.casefold(), choice.label.casefold(), choice.label.split(": ")[-1].casefold()):
            return choice
    return None


async def apply_mode(session: AcpSession, wanted: str) -> ModeChoice:
    """Switch to the mode or option value ``wanted``; LookupError when the agent offers no such thing,
    ``AcpToolGateUnroutable`` when the gate forbids it."""
    choice = find_mode(session, wanted)
    if choice is None:
        raise LookupError(wanted)
    if choice.refused:
        runtime = session.runtime
        raise AcpToolGateUnroutable(
            f"{choice.value!r} lets tools run without asking, but tool_gate is {runtime.spec.tool_gate!r}",
            data={"agent": runtime.spec.name, "mode": choice.value, "tool_gate": runtime.spec.tool_gate,
                  "reason": "requested"})
    config_id, eq, value = choice.value.partition("=")
    if eq and config_id in session.config_options:
        result = await session.runtime.request("session/set_config_option", {
            "sessionId": session.session_id, "configId": config_id, "value": value})
        session.config_options[config_id] = {**session.config_options[config_id], "currentValue": value}
        session.options_changed(result)
    else:
        await session.set_mode(choice.value)
    return choice

