"""Answering an agent's ``elicitation/create``: the person's answer within the approval timeout, else
a decline; no one to ask, or a stop, is a cancel."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from core.acp.exchange import ElicitationRequest
from core.acp.types import ToolCall

__all__ = ["CANCEL", "DECLINE", "Elicitor", "ask_person", "asked_about"]

log = logging.getLogger("acp_relay.acp.elicit")

#: Shows the request to the person; returns the ACP answer (``{"action": ..., "content": ...}``).
Elicitor = Callable[[ElicitationRequest], Awaitable[dict[str, Any]]]

DECLINE: dict[str, Any] = {"action": "decline"}
CANCEL: dict[str, Any] = {"action": "cancel"}


def asked_about(params: dict[str, Any], tools: dict[str, ToolCall]) -> str:
    """The tool call a form is the question of (``toolCallId``: claude-agent-acp's AskUserQuestion), when
    that call does nothing else (kind ``other``): the person answering it is its permission. "" when
    none; a call of any other kind tied to a form still needs its own permission request."""
    call_id = params.get("toolCallId")
    if not isinstance(call_id, str) or not call_id:
        return ""
    call = tools.get(call_id)
    return call_id if call is not None and (call.kind or "other") == "other" else ""


async def ask_person(request: ElicitationRequest, elicitor: Elicitor | None, *, timeout_s: float) -> dict[str, Any]:
    """The person's answer; declined when no one can be asked or no answer came within ``timeout_s``
    (the elicitor is cancelled then, and its card says so)."""
    if elicitor is None:
        return dict(DECLINE)
    try:
        return await asyncio.wait_for(elicitor(request), timeout=timeout_s)
    except TimeoutError:
        log.info("no answer to a form within %gs: declined", timeout_s)
        return dict(DECLINE)
