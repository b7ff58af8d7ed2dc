"""Document: folding a turn's events into one neutral reply, and the wording it uses."""

from __future__ import annotations

import re

from core.acp._dispatch import refusal_from_error
from core.acp.types import (
    CompactionStatus,
    KiroMetadata,
    Notice,
    PlanEntry,
    PlanUpdate,
    RateLimitNotice,
    RefusalInfo,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    TurnEnded,
    UsageUpdate,
)
from core.engine import wording
from core.engine.document import Document

KIRO_EXPLANATION = "The selected model cannot continue this conversation because of its content policy."
CLAUDE_023_REFUSAL = (
    "Internal error: API Error: Claude Code is unable to respond to this request, which appears to violate "
    "our Usage Policy (https://www.anthropic.com/legal/aup). Please double press esc to edit your last "
    "message or start a new session for Claude Code to assist with a different task. If you are seeing "
    "this refusal repeatedly, try running /model claude-sonnet-4-20250514 to switch models."
)


def doc_of(*events: object) -> Document:
    doc = Document()
    for event in events:
        doc.apply(event)  # type: ignore[arg-type]
    return doc


def test_text_chunks_append_and_thoughts_are_not_shown() -> None:
    doc = doc_of(TextChunk("Hello, "), ThoughtChunk("secret reasoning"), TextChunk("world."))
    assert doc.to_markdown() == "Hello, world."


def test_tool_call_is_one_line_per_id_updated_in_place() -> None:
    call = ToolCall("t1", title="Read config.json", kind="read", status="pending", started=True)
    doc = doc_of(call, ToolCall("t2", title="Run tests", kind="execute", status="in_progress"))
    doc.apply(call.merged({"status": "completed"}))
    md = doc.to_markdown()
    assert md.splitlines() == ["✅ Read config.json (read): done", "🔄 Run tests (execute): running"]


def test_plan_is_a_checklist_replaced_by_each_update() -> None:
    doc = doc_of(PlanUpdate((PlanEntry("old step"),)))
    doc.apply(PlanUpdate((PlanEntry("a", "completed"), PlanEntry("b", "in_progress"), PlanEntry("c"))))
    assert doc.to_markdown() == "- [x] a\n- [ ] b (in progress)\n- [ ] c"


def test_sections_come_in_order_notices_plan_tools_text_refusal_error_footer() -> None:
    doc = doc_of(TextChunk("answer"), ToolCall("t", title="grep", status="completed"),
                 PlanUpdate((PlanEntry("p"),)), Notice("note"),
                 TurnEnded("refusal", RefusalInfo(category="cyber")))
    doc.set_error("It failed.")
    doc.finish(1.0)
    sections = doc.to_markdown().split("\n\n")
    assert sections == ["note", "- [ ] p", "✅ grep: done", "answer",
                        f"{wording.REFUSAL_LEAD}\nCategory: cyber", "It failed.", "⏱ 1.0s"]


def test_footer_shows_context_only_when_known() -> None:
    bare = Document()
    bare.apply(TextChunk("x"))
    bare.finish(12.34)
    assert bare.to_markdown().endswith("⏱ 12.3s")
    known = doc_of(TextChunk("x"))
    known.finish(12.34, context_pct=45.2)
    assert known.to_markdown().endswith("⏱ 12.3s · context 45%")


def test_the_document_takes_the_context_from_the_turn_not_from_events() -> None:
    # The session computes it (tests/acp/test_acp_events.py); the document only shows what it is given.
    doc = doc_of(TextChunk("x"), UsageUpdate(used=50_000, size=200_000), KiroMetadata(context_pct=45.2))
    doc.finish(2, context_pct=61)
    assert doc.to_markdown().endswith("context 61%")


def test_keyed_notice_is_corrected_in_place_not_appended() -> None:
    doc = doc_of(Notice("queued behind 1"), Notice(wording.retrying(2, 3), key="retry"), TextChunk("ok"))
    assert doc.has_notice("retry")
    doc.apply(Notice(wording.RETRY_SUCCEEDED, key="retry"))
    md = doc.to_markdown()
    assert md == "queued behind 1\nRetried successfully.\n\nok"
    assert "Retrying" not in md


def test_keyed_notice_with_empty_text_is_removed() -> None:
    doc = doc_of(Notice("Retrying (attempt 2 of 3)…", key="retry"), Notice("", key="retry"), TextChunk("a"))
    assert doc.to_markdown() == "a"
    assert not doc.has_notice("retry")


def test_compaction_status_is_one_status_line() -> None:
    doc = doc_of(CompactionStatus("started"), CompactionStatus("completed", "summary text"))
    assert doc.to_markdown() == wording.COMPACTED


def test_rate_limit_notice_is_one_line_replaced_in_place() -> None:
    doc = doc_of(RateLimitNotice("slow down 1"), RateLimitNotice("slow down 2"))
    assert doc.to_markdown() == "slow down 2"


def test_cancelled_turn_says_stopped_after_the_partial_answer() -> None:
    doc = doc_of(Notice("a notice"), TextChunk("partial"), TurnEnded("cancelled"))
    assert doc.to_markdown() == f"a notice\n\npartial\n\n{wording.STOPPED}"


def test_refusal_card_lists_only_fields_the_provider_gave() -> None:
    info = RefusalInfo(category="", explanation="Policy X.", recommended_model="model-b")
    assert wording.refusal_card_text(info) == (
        f"{wording.REFUSAL_LEAD}\nWhy: Policy X.\nSuggested model: model-b")


def test_bare_refusal_is_just_the_lead_line() -> None:
    doc = doc_of(TurnEnded("refusal"))
    assert doc.to_markdown() == wording.REFUSAL_LEAD


def test_refusal_card_appears_once_when_explanation_was_streamed() -> None:
    info = RefusalInfo(category="content_filter", explanation=KIRO_EXPLANATION)
    doc = doc_of(TextChunk(KIRO_EXPLANATION), TurnEnded("refusal", info))
    md = doc.to_markdown()
    assert md.count(KIRO_EXPLANATION) == 1
    assert md.count(wording.REFUSAL_LEAD) == 1
    assert "Why:" not in md and "Category: content_filter" in md


def test_refusal_card_shows_explanation_when_it_was_not_streamed() -> None:
    info = RefusalInfo(explanation=KIRO_EXPLANATION)
    md = doc_of(TurnEnded("refusal", info)).to_markdown()
    assert md.count(KIRO_EXPLANATION) == 1
    assert f"Why: {KIRO_EXPLANATION}" in md


def test_streamed_explanation_with_different_line_breaks_is_still_recognised() -> None:
    streamed = KIRO_EXPLANATION.replace(" because", "\nbecause")
    info = RefusalInfo(explanation=KIRO_EXPLANATION)
    md = doc_of(TextChunk(streamed), TurnEnded("refusal", info)).to_markdown()
    assert "Why:" not in md


def test_error_streamed_as_text_before_the_rpc_error_is_shown_once() -> None:
    raw = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    doc = doc_of(TextChunk("Let me look at that.\n\n"), TextChunk(raw))
    doc.set_error("The model is overloaded right now; try again in a minute.", raw_message=raw)
    md = doc.to_markdown()
    assert "overloaded_error" not in md
    assert md == "Let me look at that.\n\nThe model is overloaded right now; try again in a minute."


def test_streamed_echo_of_the_prose_itself_is_removed() -> None:
    prose = "The request was malformed. Use /compact or start a new conversation."
    doc = doc_of(TextChunk("Working on it. " + prose))
    doc.set_error(prose)
    assert doc.to_markdown() == f"Working on it.\n\n{prose}"


def test_real_answer_text_is_not_mistaken_for_an_echo() -> None:
    doc = doc_of(TextChunk("Here is the fix for the error handling code."))
    doc.set_error("The agent process exited unexpectedly.", raw_message="process exited with code 1")
    assert doc.text == "Here is the fix for the error handling code."


def test_short_trailing_word_is_not_treated_as_echo() -> None:
    doc = doc_of(TextChunk("The result:\nError"))
    doc.set_error("Something went wrong.", raw_message="Error: internal")
    assert doc.text.endswith("Error")


def test_partial_note_follows_the_answer() -> None:
    doc = doc_of(TextChunk("half an answer"))
    doc.set_partial_note()
    doc.set_error("The agent did not finish in time.")
    expected = f"half an answer\n\n{wording.PARTIAL_NOTE}\n\nThe agent did not finish in time."
    assert doc.to_markdown() == expected


def test_finished_turn_with_nothing_to_show_is_not_silent() -> None:
    doc = Document()
    assert doc.to_markdown() == ""
    doc.finish(0.2)
    assert doc.to_markdown() == f"{wording.EMPTY_ANSWER}\n\n⏱ 0.2s"


def test_footer_uses_minutes_for_long_turns() -> None:
    assert wording.footer_text(125, 12.6) == "⏱ 2m 05s · context 13%"


def test_prose_names_no_surface_command_but_compact() -> None:
    texts = [wording.SESSION_LOST, wording.SESSION_NOT_RESUMABLE, wording.NEW_CONVERSATION,
             wording.STOPPED, wording.NOTHING_TO_STOP, wording.queued_text(2), wording.queue_full_text(5),
             wording.retrying(2, 3), wording.retry_gave_up(3), wording.unauthorised_text("7"),
             wording.approval_prompt_text("rm -rf build", "execute"), wording.delivery_failure_text(),
             wording.APPROVAL_EXPIRED, wording.EMPTY_ANSWER, wording.PARTIAL_NOTE]
    # Refusal cards carry the provider's own words: claude-agent-acp 0.23.1 names "/model X" and
    # Claude Code's terminal keys in its refusal sentence (tests/acp/test_acp_person_prose.py).
    claude_023 = refusal_from_error(CLAUDE_023_REFUSAL)
    assert claude_023.recommended_model == "claude-sonnet-4-20250514"
    infos = [claude_023, RefusalInfo(), RefusalInfo(explanation=KIRO_EXPLANATION, recommended_model="auto"),
             RefusalInfo("policy", "Use /new, !new or /model to go on; /compact may help.", "model-b")]
    texts += [wording.refusal_card_text(info) for info in infos]
    for text in texts:
        assert "/new" not in text and "!new" not in text and "/stop" not in text and "/help" not in text
        assert set(re.findall(r"(?<![\w.:/~-])[/!]([A-Za-z][\w-]*)", text)) <= {"compact"}, text


def test_unauthorised_text_tells_the_user_id() -> None:
    assert wording.unauthorised_text("12345") == (
        "You are not allowed to use this bot. Your user id is 12345; "
        "an operator can add it to the allow-list.")


def test_help_text_uses_the_surface_spelling() -> None:
    text = wording.help_text({"!new": "reset", "/compact": "compact", "!compact": "compact", "!stop": "stop"})
    assert "`!new`: start a new conversation" in text
    assert "`/compact` or `!compact`" in text
    assert "/new" not in text.replace("!new", "")


def test_approval_outcomes_name_the_decision() -> None:
    assert wording.approval_outcome_text("allow_once", "Edit a.py") == "Allowed once: Edit a.py"
    assert wording.approval_outcome_text("allow_always", "") == "Allowed for this session."
    assert wording.approval_outcome_text("allow_always", "ls -la", "execute", "ls -la") == (
        "Allowed for this session: ls -la (the same command runs again without asking; anything else is "
        "asked first)")
    assert wording.approval_outcome_text("reject_once", "x").startswith("Denied")
    assert wording.approval_outcome_text("timed_out", "x").startswith("No answer in time")
    assert wording.approval_outcome_text("expired").startswith("Expired")
