"""The PreToolUse gate: every permission request the agent sends passes through here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from core.acp.client import AcpPermissionNeeded, AcpToolGateUnroutable
from core.acp.spec import AgentSpec, detect_backend
from core.acp.types import PermissionRequest

__all__ = ["Approver", "ToolGateUnroutable", "check_routable", "decide"]

log = logging.getLogger("acp_relay.acp.gate")

#: Kiro flags that make tool calls run without a permission request.
_TRUST_FLAGS = ("-a", "--trust-all-tools", "--trust-tools")

#: Asked for a decision; returns an option kind (allow_once, allow_always, reject_once,
#: reject_always) or "cancelled".
Approver = Callable[[PermissionRequest], Awaitable[str]]


class ToolGateUnroutable(Exception):
    """The agent is configured so that its tool calls never reach the gate."""


def check_routable(spec: AgentSpec) -> None:
    """Refuse, before spawning, a configuration whose tool calls would bypass the gate."""
    if spec.tool_gate == "allow":
        return
    backend = spec.backend or detect_backend(spec.command, spec.args)
    if backend != "kiro":
        return
    flags = [a for a in spec.args if a in _TRUST_FLAGS or a.startswith("--trust-tools=")]
    if flags:
        cause = ToolGateUnroutable(f"{flags[0]} with tool_gate={spec.tool_gate}")
        raise AcpToolGateUnroutable(
            f"agents.{spec.name}: {flags[0]} lets tools run without asking, but tool_gate is "
            f"{spec.tool_gate!r}", data={"agent": spec.name, "flag": flags[0], "tool_gate": spec.tool_gate},
        ) from cause


def _selected(request: PermissionRequest, *kinds: str) -> dict[str, Any]:
    for kind in kinds:
        option = request.option_for(kind)
        if option is not None:
            return {"outcome": {"outcome": "selected", "optionId": option.option_id}}
    return {"outcome": {"outcome": "cancelled"}}


def outcome_for(request: PermissionRequest, kind: str) -> dict[str, Any]:
    """The nested ACP answer for a decision expressed as an option kind."""
    # A fallback may only grant less than the person chose: "always" may become "once", never the
    # reverse; a rejection may widen (rejecting more is the safe side).
    if kind == "allow_always":
        return _selected(request, "allow_always", "allow_once")
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
            "a tool call needs approval", tool_title=request.tool_call.title, tool_kind=request.tool_call.kind)
    try:
        kind = await asyncio.wait_for(approver(request), timeout=timeout_s)
    except TimeoutError:
        log.info("no approval within %gs for %r: rejected", timeout_s, request.tool_call.title)
        kind = "reject_once"
    return kind, outcome_for(request, kind)
