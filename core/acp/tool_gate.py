"""The PreToolUse gate: every permission request the agent sends passes through here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from core.acp.bypass_flags import Bypass, launch_bypasses
from core.acp.client import AcpPermissionNeeded, AcpToolGateUnroutable
from core.acp.process import child_env
from core.acp.spec import AgentSpec
from core.acp.types import PermissionRequest
from core.errors import RelayError

__all__ = ["Approver", "ToolGateUnroutable", "check_routable", "decide", "outcome_for", "spawn_bypasses",
           "unroutable"]

log = logging.getLogger("acp_relay.acp.gate")

#: Asked for a decision; returns an option kind (allow_once, allow_always, reject_once, reject_always)
#: or "cancelled".
Approver = Callable[[PermissionRequest], Awaitable[str]]


class ToolGateUnroutable(RelayError):
    """The agent is configured so that its tool calls never reach the gate."""

    code = "tool_gate.unroutable"


def spawn_bypasses(spec: AgentSpec) -> list[Bypass]:
    """What would let this agent run tools unasked: its flags, its ``env`` and what it inherits from
    ours (the environment it will really get). Nothing when the gate is ``allow``."""
    if spec.tool_gate == "allow":
        return []
    return launch_bypasses(spec.name, spec.command, spec.args, child_env(spec), configured_env=spec.env,
                           backend=spec.backend)


def unroutable(spec: AgentSpec, bypass: Bypass) -> AcpToolGateUnroutable:
    """The refusal of one bypass, with the facts its sentence names (``core.gate_text``)."""
    cause = ToolGateUnroutable(f"{bypass.setting} with tool_gate={spec.tool_gate}")
    data = {"agent": spec.name, "tool_gate": spec.tool_gate, "program": bypass.program,
            "path": bypass.path, ("env" if bypass.env else "flag"): bypass.setting}
    exc = AcpToolGateUnroutable(
        f"agents.{spec.name}: {bypass.setting} lets tools run without asking, but tool_gate is {spec.tool_gate!r}",
        data=data)
    exc.__cause__ = cause
    return exc


def check_routable(spec: AgentSpec) -> None:
    """Refuse, before spawning, a configuration whose tool calls would bypass the gate."""
    if found := spawn_bypasses(spec):
        raise unroutable(spec, found[0])


def _selected(request: PermissionRequest, *kinds: str) -> dict[str, Any]:
    for kind in kinds:
        option = request.option_for(kind)
        if option is not None:
            return {"outcome": {"outcome": "selected", "optionId": option.option_id}}
    return {"outcome": {"outcome": "cancelled"}}


def outcome_for(request: PermissionRequest, kind: str) -> dict[str, Any]:
    """The nested ACP answer for a decision expressed as an option kind."""
    # A fallback may only grant less than the person chose: "always" may become "once", never the
    # reverse; a rejection may widen (rejecting more is the safe side). "Allow for this session" is
    # answered with the agent's allow_once where it has one: the relay remembers the scope the person
    # saw (one command, one path), while an agent's own "always" covers what IT decides (Kiro trusts
    # the whole tool), and its later calls would then run without a request at all.
    if kind == "allow_always":
        return _selected(request, "allow_once", "allow_always")
    if kind == "allow_once":
        return _selected(request, "allow_once")
    if kind in ("reject_once", "reject_always"):
        fallback = "reject_always" if kind == "reject_once" else "reject_once"
        return _selected(request, kind, fallback)
    return {"outcome": {"outcome": "cancelled"}}


async def decide(
    gate: str, request: PermissionRequest, approver: Approver | None, *, timeout_s: float,
) -> tuple[str, dict[str, Any]]:
    """The gate's decision as (option kind, ACP answer). ``ask`` without approver raises."""
    if gate == "allow":
        return "allow_once", outcome_for(request, "allow_once")
    if gate == "deny":
        return "reject_once", outcome_for(request, "reject_once")
    if approver is None:
        raise AcpPermissionNeeded(
            "a tool call needs approval", tool_title=request.tool_call.display, tool_kind=request.tool_call.kind)
    try:
        kind = await asyncio.wait_for(approver(request), timeout=timeout_s)
    except TimeoutError:
        log.info("no approval within %gs for %r: rejected", timeout_s, request.tool_call.display)
        kind = "reject_once"
    return kind, outcome_for(request, kind)
