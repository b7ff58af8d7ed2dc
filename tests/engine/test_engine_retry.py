"""The retry ladder and the error funnel through a real engine and the scripted agent.

The fake agent records every prompt it receives (``--record``), so "retried" and "not retried"
are counted on the wire, not inferred from the chat.
"""

from __future__ import annotations

import asyncio
import json

from core.engine import wording
from tests.engine.conftest import Relay, RelayFactory
from tests.waiting import HANG_GUARD_S

THROTTLED = json.dumps({"message": "Internal error",
                        "data": "Encountered an error in the response stream: ThrottlingException"})
# claude-agent-acp 0.23.1's usage-policy refusal, which it sends as a -32603 error (docs/acp-facts.md).
CLAUDE_023_REFUSAL = (
    "Internal error: API Error: Claude Code is unable to respond to this request, which appears to violate "
    "our Usage Policy (https://www.anthropic.com/legal/aup). Please double press esc to edit your last "
    "message or start a new session for Claude Code to assist with a different task. If you are seeing "
    "this refusal repeatedly, try running /model claude-sonnet-4-20250514 to switch models."
)
MALFORMED = json.dumps({"message": "Internal error",
                        "data": "Encountered an error in the response stream: Improperly formed request. "
                                "(request_id: abc)"})


def notices_like(r: Relay, fragment: str) -> list[str]:
    return [t for t in r.texts() if fragment in t]


async def answer_every_approval(r: Relay, label: str) -> None:
    """Tap ``label`` on each approval request as it appears, until the conversation is idle."""
    tapped: set[str] = set()
    async with asyncio.timeout(HANG_GUARD_S):
        while not r.is_idle():
            for message in r.messages():
                if message.message_id not in tapped and message.text.startswith("The agent wants to run"):
                    tapped.add(message.message_id)
                    await r.press(next(b.token for b in message.buttons if b.label == label))
            await asyncio.sleep(0.01)


def permission_answers(r: Relay) -> list[str]:
    """The optionId of every answer to session/request_permission the agent received."""
    results = [f.get("result") for f in r.frames() if "method" not in f and isinstance(f.get("result"), dict)]
    return [res["outcome"].get("optionId", "") for res in results if isinstance(res.get("outcome"), dict)]


async def test_a_transient_failure_is_retried_and_the_answer_arrives(relay: RelayFactory) -> None:
    r = await relay()
    script = f"fail_times throttle 1 -32603 {THROTTLED}\ntext the answer"
    reply = await r.ask(script)
    assert r.prompts() == [script, script], "one retry on the wire"
    assert "the answer" in reply.text
    assert wording.RETRY_SUCCEEDED in reply.text
    assert "Retrying" not in reply.text, "the retry notice was corrected in place"
    assert len(r.messages()) == 1, "the retry notice and the answer share one message"


async def test_a_transient_failure_three_times_gives_up_with_one_corrected_notice(relay: RelayFactory) -> None:
    r = await relay()
    shown: list[tuple[str, str]] = []
    r.surface.observers.append(lambda method, key, text: shown.append((method, text)))
    # each attempt waits a little before failing, so the retry notice is on screen meanwhile
    script = f"sleep 0.1\nfail_times throttle 5 -32603 {THROTTLED}\ntext never"
    reply = await r.ask(script)
    assert len(r.prompts()) == 3, "the ladder has three attempts in all"
    assert len(r.messages()) == 1, "no separate message per retry"
    retry_lines = [text for _, text in shown if "Retrying (attempt" in text]
    assert retry_lines, "the person saw that the relay was retrying"
    assert all(text.count("Retrying") == 1 for text in retry_lines), "one retry line, updated in place"
    assert [m for m, _ in shown].count("send") == 1, "every later state was an edit of that message"
    assert reply.text.count(wording.retry_gave_up(3)) == 1
    assert "Retrying" not in reply.text, "the retry line was replaced by the give-up line"
    assert "never" not in reply.text
    assert "ThrottlingException" not in reply.text, "no raw provider text"
    assert '"message"' not in reply.text and "-32603" not in reply.text


async def test_a_terminal_failure_is_never_retried(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask(f"error_data -32603 {MALFORMED}")
    assert len(r.prompts()) == 1
    assert "malformed" in reply.text
    assert "/compact" in reply.text, "the only command core prose may name"
    assert "Retrying" not in reply.text and "Gave up" not in reply.text
    assert "request_id" not in reply.text


async def test_no_retry_once_text_was_streamed(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask(f"text half an answer\nerror_data -32603 {THROTTLED}")
    assert len(r.prompts()) == 1, "a retry would repeat what the person already read"
    assert "half an answer" in reply.text


async def test_no_retry_once_a_tool_ran(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask(f"tool t1 execute touch x\ntool_update t1 in_progress\nerror_data -32603 {THROTTLED}")
    assert len(r.prompts()) == 1, "a retry could run the tool twice"
    assert "touch x" in reply.text


async def test_no_retry_after_an_approved_tool(relay: RelayFactory) -> None:
    r = await relay()
    # "quiet": after the answer the agent sends nothing (no text, no tool update) before failing,
    # so nothing but the approval itself tells the ladder that a retry could run the tool twice.
    msg = await r.send(f"tool t1 execute ls\npermission t1 quiet\nerror_data -32603 {THROTTLED}")
    await answer_every_approval(r, "Allow once")
    assert permission_answers(r) == ["allow-once"], "the person's approval reached the agent"
    assert len(r.prompts()) == 1, "a retry could run the approved tool again"
    assert "Retrying" not in r.answer(msg)


async def test_no_retry_after_an_approval_request_even_a_denied_one(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send(f"tool t1 execute rm -rf build\npermission t1 quiet\nerror_data -32603 {THROTTLED}")
    await answer_every_approval(r, "Deny")
    assert permission_answers(r) == ["reject"], "asked once, denied once"
    assert len(r.prompts()) == 1, "a retry would ask the person the same question again"
    assert "Retrying" not in r.answer(msg)


async def test_a_refusal_is_never_retried(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("stop refusal")
    assert len(r.prompts()) == 1
    assert wording.REFUSAL_LEAD in reply.text
    assert "Retrying" not in reply.text


async def test_a_refusal_sent_as_an_error_is_a_refusal_card_and_never_retried(relay: RelayFactory) -> None:
    # claude-agent-acp 0.23 reports a usage-policy refusal as a JSON-RPC error, not a stop reason;
    # the session folds it onto a refusal, so the person sees the refusal card, not an error.
    r = await relay()
    reply = await r.ask(f"error -32603 {CLAUDE_023_REFUSAL}")
    assert len(r.prompts()) == 1
    assert wording.REFUSAL_LEAD in reply.text
    assert "Suggested model: claude-sonnet-4-20250514" in reply.text
    assert "Usage Policy" in reply.text, "the provider's own reason is shown"
    assert "declined this message under the provider's usage policy" not in reply.text, "not the error prose"
    assert "Retrying" not in reply.text and "/model" not in reply.text


async def test_error_text_streamed_before_the_error_is_shown_once(relay: RelayFactory) -> None:
    r = await relay()
    echo = "Encountered an error in the response stream: Improperly formed request. (request_id: abc)"
    reply = await r.ask(f"text {echo}\nerror_data -32603 {MALFORMED}")
    assert len(r.prompts()) == 1
    assert "Improperly formed request" not in reply.text, "the echoed raw error is not shown"
    assert reply.text.count("malformed") == 1, "the prose appears once"


async def test_an_echoed_transient_error_does_not_block_the_retry(relay: RelayFactory) -> None:
    r = await relay()
    echo = "Encountered an error in the response stream: ThrottlingException"
    script = f"text {echo}\nerror_data -32603 {THROTTLED}"
    reply = await r.ask(script)
    assert len(r.prompts()) == 3, "the echo is not an answer: the ladder still ran"
    assert echo not in reply.text
    assert reply.text.count(wording.retry_gave_up(3)) == 1


async def test_the_agent_dying_mid_turn_is_reported_and_the_next_prompt_gets_a_new_process(
        relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("text before dying\ndie 3")
    assert "before dying" in reply.text
    assert "Traceback" not in reply.text
    first_pid = r.engine.pool.spawned
    after = await r.ask("text alive again")
    assert "alive again" in after.text
    assert r.engine.pool.spawned == first_pid + 1, "a dead agent process is never reused"
