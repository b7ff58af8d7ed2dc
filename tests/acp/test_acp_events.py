"""Every session/update kind and Kiro extension -> its typed event; refusals; ordering."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.acp.types import (
    AgentNotice,
    AvailableCommands,
    CompactionStatus,
    ConfigOptions,
    Cost,
    KiroMetadata,
    ModeChanged,
    PlanEntry,
    PlanUpdate,
    RateLimitNotice,
    RefusalInfo,
    SessionInfo,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    TurnEnded,
    UnknownUpdate,
    UsageUpdate,
)

GH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2"


def _update(payload: dict[str, Any]) -> str:
    return "update " + json.dumps(payload)


async def _turn(start, agent, events, script: str, *flags: str, backend: str = "generic", tool_gate: str = "ask"):
    rt = await start(agent(*flags, backend=backend, tool_gate=tool_gate))
    session = await rt.new_session()
    ev = events()
    stats = await session.prompt(script.replace("$SID", session.session_id), on_event=ev)
    assert isinstance(ev.items[-1], TurnEnded)
    assert len(ev.of(TurnEnded)) == 1
    return session, stats, ev


UPDATES: list[tuple[str, dict[str, Any], Any]] = [
    ("agent_message_chunk",
     {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}, TextChunk("hi")),
    ("agent_thought_chunk",
     {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}, ThoughtChunk("hmm")),
    ("plan",
     {"sessionUpdate": "plan", "entries": [
         {"content": "read", "status": "completed", "priority": "high"},
         {"content": "write", "status": "in_progress", "priority": "medium"},
         {"content": "test", "status": "pending", "priority": "low"}]},
     PlanUpdate((PlanEntry("read", "completed", "high"), PlanEntry("write", "in_progress", "medium"),
                 PlanEntry("test", "pending", "low")))),
    ("available_commands_update",
     {"sessionUpdate": "available_commands_update", "availableCommands": [
         {"name": "compact", "description": "shrink"}, {"name": "review", "description": "review"}]},
     AvailableCommands(("compact", "review"), ("shrink", "review"))),
    ("current_mode_update", {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}, ModeChanged("plan")),
    ("usage_update", {"sessionUpdate": "usage_update", "used": 1234, "size": 200000}, UsageUpdate(1234, 200000)),
    ("usage_update_cost", {"sessionUpdate": "usage_update", "used": 1, "size": 2,
                           "cost": {"amount": 0.25, "currency": "USD"}}, UsageUpdate(1, 2, Cost(0.25, "USD"))),
    ("usage_update_bad_cost", {"sessionUpdate": "usage_update", "used": 1, "size": 2,
                               "cost": {"amount": "lots", "currency": "USD"}}, UsageUpdate(1, 2)),
    ("session_info_update", {"sessionUpdate": "session_info_update", "title": "Fix the bug"},
     SessionInfo("Fix the bug")),
    ("compaction_update", {"sessionUpdate": "compaction_update", "status": "started"},
     CompactionStatus("started")),
    ("compaction_summary_chunk",
     {"sessionUpdate": "compaction_summary_chunk", "content": {"type": "text", "text": "summary"}},
     CompactionStatus("summary", "summary")),
    # The schema's Notice: severity, title, description (not a content block).
    ("notice", {"sessionUpdate": "notice", "severity": "warning", "title": "Rate limited",
                "description": "retrying in 5s"}, AgentNotice("warning", "Rate limited", "retrying in 5s")),
    ("notice_title_only", {"sessionUpdate": "notice", "severity": "info", "title": "Heads up"},
     AgentNotice("info", "Heads up")),
]


@pytest.mark.parametrize(("payload", "expected"), [u[1:] for u in UPDATES], ids=[u[0] for u in UPDATES])
async def test_update_kind(start, agent, events, payload: dict[str, Any], expected: Any) -> None:
    _, _, ev = await _turn(start, agent, events, _update(payload))
    assert ev.items[:-1] == [expected]


async def test_config_option_update_refreshes_the_models(start, agent, events) -> None:
    options = [{"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "y",
                "options": [{"value": "x", "name": "X"}, {"value": "y", "name": "Y"}]}]
    session, _, ev = await _turn(start, agent, events,
                                 _update({"sessionUpdate": "config_option_update", "configOptions": options}))
    assert ev.items[:-1] == [ConfigOptions(tuple(options))]
    assert session.models == ("x", "y")
    assert session.current_model == "y"
    assert session.model_config_id == "model"


async def test_current_mode_update_is_remembered(start, agent, events) -> None:
    session, _, _ = await _turn(start, agent, events,
                                _update({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}))
    assert session.current_mode == "plan"


async def test_tool_call_and_merged_updates(start, agent, events) -> None:
    script = "\n".join([
        "tool t1 execute Run the tests",
        _update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"}),
        "tool_update t1 completed 3 passed",
        _update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "Ran the tests"}),
    ])
    # No permission request in this script: with a gate of ask, the run would stop the turn (see
    # test_acp_gate_enforced); this test is about merging the updates.
    _, stats, ev = await _turn(start, agent, events, script, tool_gate="allow")
    calls = ev.of(ToolCall)
    assert calls == [
        ToolCall("t1", "Run the tests", "execute", "pending", (), started=True),
        ToolCall("t1", "Run the tests", "execute", "in_progress", ()),
        ToolCall("t1", "Run the tests", "execute", "completed", ("3 passed",)),
        ToolCall("t1", "Ran the tests", "execute", "completed", ("3 passed",)),
    ]
    assert stats.tool_ran is True


async def test_update_for_an_unknown_tool_call_starts_from_empty(start, agent, events) -> None:
    _, stats, ev = await _turn(start, agent, events, "tool_update t9 failed boom")
    assert ev.of(ToolCall) == [ToolCall("t9", "", "", "failed", ("boom",))]
    assert stats.tool_ran is True


async def test_pending_tool_call_alone_did_not_run(start, agent, events) -> None:
    _, stats, _ = await _turn(start, agent, events, "tool t1 edit Edit a file")
    assert stats.tool_ran is False


async def test_kiro_metadata(start, agent, events) -> None:
    meta = {"contextUsagePercentage": 42.5, "turnDurationMs": 1234,
            "meteringUsage": [{"unit": "credit", "unitPlural": "credits", "value": 0.25},
                              {"unit": "credit", "unitPlural": "credits", "value": 0.5}]}
    session, stats, ev = await _turn(start, agent, events, f"text hi\nkiro_meta {json.dumps(meta)}", "--kiro",
                                     backend="kiro")
    assert ev.of(KiroMetadata) == [KiroMetadata(context_pct=42.5, credits=0.75, turn_ms=1234)]
    assert (stats.context_pct, stats.credits, stats.turn_ms) == (42.5, 0.75, 1234)
    assert session.context_pct == 42.5, "the session keeps what the agent last said"
    assert stats.stop_reason == "end_turn"
    assert stats.refusal is None


async def test_a_usage_update_gives_the_context_percent_of_its_size(start, agent, events) -> None:
    session, stats, ev = await _turn(start, agent, events, "text hi\nusage 50000 200000")
    assert ev.of(UsageUpdate) == [UsageUpdate(50_000, 200_000)]
    assert (stats.context_pct, session.context_pct) == (25.0, 25.0)
    session_stats = await session.prompt("text again", on_event=events())
    assert (session_stats.context_pct, session.context_pct) == (None, 25.0), (
        "a turn that says nothing keeps the session's last figure; the turn's own stats say nothing")


def test_a_usage_update_without_a_size_leaves_the_context_unknown() -> None:
    assert UsageUpdate(used=10, size=0).context_pct is None
    assert UsageUpdate(used=None, size=100).context_pct is None
    assert UsageUpdate(used=1, size=8).context_pct == 12.5


async def test_kiro_metadata_partial_fields_keep_earlier_values(start, agent, events) -> None:
    script = 'kiro_meta {"contextUsagePercentage": 10}\nkiro_meta {"turnDurationMs": 5}'
    _, stats, _ = await _turn(start, agent, events, script, "--kiro", backend="kiro")
    assert (stats.context_pct, stats.credits, stats.turn_ms) == (10.0, None, 5)


@pytest.mark.parametrize(("status", "expected"), [
    ({"type": "started"}, "started"), ("completed", "completed"), ({"status": "failed"}, "failed")])
async def test_kiro_compaction_status(start, agent, events, status: Any, expected: str) -> None:
    params = {"sessionId": "$SID", "status": status, "message": "compacting the conversation"}
    _, _, ev = await _turn(start, agent, events, f"ext _kiro.dev/compaction/status {json.dumps(params)}",
                           "--kiro", backend="kiro")
    assert ev.items[:-1] == [CompactionStatus(expected, "compacting the conversation")]


async def test_kiro_rate_limit_notice_is_redacted(start, agent, events) -> None:
    params = {"sessionId": "$SID", "message": f"Rate limited; retrying (token {GH_TOKEN})"}
    _, _, ev = await _turn(start, agent, events, f"ext _kiro.dev/error/rate_limit {json.dumps(params)}",
                           "--kiro", backend="kiro")
    [notice] = ev.of(RateLimitNotice)
    assert GH_TOKEN not in notice.message
    assert notice.message.startswith("Rate limited; retrying")
    assert "ghp_[redacted]" in notice.message


REFUSAL_META = {
    "stopReason": "CONTENT_FILTERED",
    "refusal": {"category": "harmful_content", "recommendedModel": "claude-sonnet-4",
                "explanation": f"Blocked by the content filter (key {GH_TOKEN})."},
}
CANNED = "The selected model cannot continue this conversation."


async def test_kiro_content_filtered_refusal(start, agent, events) -> None:
    script = f"kiro_meta {json.dumps(REFUSAL_META)}\ntext {CANNED}"
    _, stats, ev = await _turn(start, agent, events, script, "--kiro", backend="kiro")
    assert stats.stop_reason == "refusal"
    refusal = stats.refusal
    assert refusal is not None
    assert refusal.category == "harmful_content"
    assert refusal.recommended_model == "claude-sonnet-4"
    assert GH_TOKEN not in refusal.explanation
    assert refusal.explanation.startswith("Blocked by the content filter")
    assert ev.items[-1] == TurnEnded("refusal", refusal)
    assert stats.text == CANNED  # the canned explanation still streams as text


async def test_kiro_refusal_with_missing_fields_stays_empty(start, agent, events) -> None:
    _, stats, ev = await _turn(start, agent, events, 'kiro_meta {"stopReason": "CONTENT_FILTERED"}', "--kiro",
                               backend="kiro")
    assert stats.refusal == RefusalInfo()
    assert ev.items[-1] == TurnEnded("refusal", RefusalInfo())


async def test_generic_backend_does_not_parse_kiro_refusals(start, agent, events) -> None:
    script = f"kiro_meta {json.dumps(REFUSAL_META)}\ntext {CANNED}"
    _, stats, ev = await _turn(start, agent, events, script, backend="generic")
    assert stats.stop_reason == "end_turn"
    assert stats.refusal is None
    assert ev.items[-1] == TurnEnded("end_turn")
    assert [m.refusal for m in ev.of(KiroMetadata)] == [None]


async def test_bare_refusal_stop_reason(start, agent, events) -> None:
    _, stats, ev = await _turn(start, agent, events, "text no\nstop refusal")
    assert stats.stop_reason == "refusal"
    assert stats.refusal is None
    assert ev.items[-1] == TurnEnded("refusal", RefusalInfo())


@pytest.mark.parametrize("reason", ["max_tokens", "max_turn_requests", "something_new"])
async def test_other_stop_reasons_are_data(start, agent, events, reason: str) -> None:
    _, stats, ev = await _turn(start, agent, events, f"stop {reason}")
    assert stats.stop_reason == reason
    assert ev.items[-1] == TurnEnded(reason)


async def test_unknown_update_kind_does_not_crash(start, agent, events) -> None:
    payload = {"sessionUpdate": "hologram_update", "beam": [1, 2]}
    session, stats, ev = await _turn(start, agent, events, f"{_update(payload)}\ntext still here")
    assert ev.items[0] == UnknownUpdate("hologram_update", payload)
    assert stats.text == "still here"
    assert session.runtime.alive


async def test_unknown_extension_notification(start, agent, events) -> None:
    params = {"sessionId": "$SID", "x": 1}
    _, stats, ev = await _turn(start, agent, events, f"ext _vendor.example/thing {json.dumps(params)}\ntext ok")
    [unknown] = ev.of(UnknownUpdate)
    assert unknown.kind == "_vendor.example/thing"
    assert stats.text == "ok"


async def test_updates_for_other_sessions_are_not_ours(start, agent, events) -> None:
    rt = await start(agent())
    mine, other = await rt.new_session(), await rt.new_session()
    ev = events()
    text = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "for the other one"}}
    script = f"ext session/update {json.dumps({'sessionId': other.session_id, 'update': text})}\ntext mine"
    stats = await mine.prompt(script, on_event=ev)
    assert stats.text == "mine"
    assert other.replayed == 1  # counted there, outside a turn


async def test_500_chunks_arrive_in_order(start, agent, events) -> None:
    _, stats, ev = await _turn(start, agent, events, "chunks 500")
    assert [e.text for e in ev.of(TextChunk)] == [f"w{i} " for i in range(500)]
    assert stats.chunks == 500
    assert stats.text == "".join(f"w{i} " for i in range(500))
