"""Refusal shapes seen on the wire that end a turn without a clean refusal stop reason, and the
gate's rule that a fallback option may only grant less than the person chose."""

from __future__ import annotations

import json

from core.acp.tool_gate import outcome_for
from core.acp.types import PermissionOption, PermissionRequest, RefusalInfo, ToolCall, TurnEnded

FILTERED = json.dumps({"stopReason": "CONTENT_FILTERED", "refusal": {
    "category": "policy", "explanation": "The selected model cannot continue this conversation.",
    "recommendedModel": "claude-sonnet"}})


async def test_kiro_content_filter_then_a_bare_internal_error_is_a_refusal_not_a_failure(start, agent, events) -> None:
    rt = await start(agent("--kiro", backend="kiro"))
    session = await rt.new_session()
    ev = events()
    stats = await session.prompt(
        f"kiro_meta {FILTERED}\ntext The selected model cannot continue this conversation.\n"
        "error -32603 Internal error", on_event=ev)
    assert stats.stop_reason == "refusal"
    assert ev.items[-1] == TurnEnded("refusal", RefusalInfo(
        "policy", "The selected model cannot continue this conversation.", "claude-sonnet"))


def _request(*kinds: str) -> PermissionRequest:
    options = tuple(PermissionOption(f"id-{k}", k, k) for k in kinds)
    return PermissionRequest("s1", ToolCall("t1", "rm -rf build", "execute"), options)


def test_allow_once_never_becomes_allow_always() -> None:
    assert outcome_for(_request("allow_always", "reject_once"), "allow_once") == {
        "outcome": {"outcome": "cancelled"}}


def test_allow_always_may_fall_back_to_allow_once() -> None:
    assert outcome_for(_request("allow_once", "reject_once"), "allow_always") == {
        "outcome": {"outcome": "selected", "optionId": "id-allow_once"}}


def test_a_rejection_may_widen_to_reject_always() -> None:
    assert outcome_for(_request("allow_once", "reject_always"), "reject_once") == {
        "outcome": {"outcome": "selected", "optionId": "id-reject_always"}}
