"""Real agents, tool permission: an allowed tool really runs in the cwd; a denied one does not."""

from __future__ import annotations

import pytest

from core.acp.runtime import AcpRuntime
from core.acp.types import AcpEvent, AcpPromptStats, ToolCall
from tests.fakes.model_api import TOOL_DONE_TEXT
from tests.peers.harness import PROMPT_TIMEOUT_S, REQUEST_TIMEOUT_S, Peer, RecordingApprover, within

pytestmark = pytest.mark.peer


async def _tool_turn(peer: Peer, approver: RecordingApprover) -> tuple[AcpPromptStats, list[AcpEvent]]:
    peer.mock.scenario = "tool"
    events: list[AcpEvent] = []

    async def body() -> AcpPromptStats:
        async with await AcpRuntime.start(peer.spec, request_timeout_s=REQUEST_TIMEOUT_S) as rt:
            session = await rt.new_session()
            return await session.prompt(
                "write the marker file", on_event=events.append, approver=approver, timeout_s=PROMPT_TIMEOUT_S
            )

    return await within(body()), events


def _asked_once_about_the_command(approver: RecordingApprover) -> None:
    assert len(approver.asked) == 1, approver.asked
    request = approver.asked[0]
    assert "marker.txt" in request.tool_call.title
    assert request.tool_call.kind == "execute"
    assert {o.kind for o in request.options} >= {"allow_once", "reject_once"}


async def test_allowed_tool_runs_for_real(peer: Peer) -> None:
    approver = RecordingApprover("allow_once")
    stats, events = await _tool_turn(peer, approver)

    _asked_once_about_the_command(approver)
    assert peer.marker.read_text().strip() == "peer-tool-ran"
    assert stats.stop_reason == "end_turn"
    assert stats.tool_ran
    assert stats.text.endswith(TOOL_DONE_TEXT)
    statuses = [e.status for e in events if isinstance(e, ToolCall)]
    assert "completed" in statuses, statuses
    answers = [r.answered for r in peer.mock.conversation_requests()]
    # claude-agent-acp 0.101 may make a model call of its own after the turn (seen: one more with tools)
    assert answers[:2] == ["tool_use", "text"], "the second model call carried the tool's result"
    assert peer.prompts() == 1


async def test_denied_tool_does_not_run(peer: Peer) -> None:
    approver = RecordingApprover("reject_once")
    stats, _events = await _tool_turn(peer, approver)

    _asked_once_about_the_command(approver)
    assert not peer.marker.exists()
    # claude reports the refusal to the model and ends the turn; codex aborts the turn ("cancelled").
    assert stats.stop_reason in ("end_turn", "cancelled")
    assert peer.prompts() == 1
