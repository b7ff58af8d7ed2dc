"""Failed turns that real agents do not report as errors, and raw provider text, through a real engine.

codex-acp 2.x answers a failed model call with end_turn after a ``systemError`` thread status and
the provider's text; claude-agent-acp 0.23 answers a prompt retried after a 429 with an empty
end_turn; claude-agent-acp 0.101 streams "API Error: ..." before the error. None of it may reach
the person as an answer, and none may be a silent success. Every text the surface was ever sent
(each post and each edit) is checked, not only the final state.
"""

from __future__ import annotations

import json

from core.engine import wording
from tests.engine.conftest import Relay, RelayFactory

THROTTLED = json.dumps({"message": "Internal error",
                        "data": "Encountered an error in the response stream: ThrottlingException"})
CODEX_429 = "exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock"
CODEX_400 = json.dumps({"error": {"type": "invalid_request_error", "code": None,
                                  "message": "Improperly formed request.", "param": None}})
CLAUDE_400 = "API Error: 400 Improperly formed request."
CLAUDE_400_ERROR = json.dumps({"message": f"Internal error: {CLAUDE_400}", "data": {"errorKind": "unknown"}})


def watch(r: Relay) -> list[str]:
    """Every text the surface is sent from now on, posts and edits alike."""
    shown: list[str] = []
    r.surface.observers.append(lambda method, key, text: shown.append(text))
    return shown


async def test_a_codex_system_error_429_is_retried_and_its_text_never_shown(relay: RelayFactory) -> None:
    r = await relay()
    shown = watch(r)
    script = f"thread_status active\nsystem_error_times k 1 {CODEX_429}\ntext the answer"
    reply = await r.ask(script)
    assert r.prompts() == [script, script], "the failed turn went up the retry ladder"
    assert "the answer" in reply.text
    assert wording.RETRY_SUCCEEDED in reply.text
    assert not [t for t in shown if "exceeded retry limit" in t], "the raw text never reached the chat"


async def test_a_codex_system_error_429_every_time_gives_the_rate_limit_prose(relay: RelayFactory) -> None:
    r = await relay()
    shown = watch(r)
    reply = await r.ask(f"system_error_times k 9 {CODEX_429}\ntext never")
    assert len(r.prompts()) == 3
    assert "rate-limiting" in reply.text
    assert reply.text.count(wording.retry_gave_up(3)) == 1
    assert not [t for t in shown if "exceeded retry limit" in t or "req_mock" in t]


async def test_a_codex_system_error_400_is_the_malformed_prose_not_raw_json(relay: RelayFactory) -> None:
    r = await relay()
    shown = watch(r)
    reply = await r.ask(f"system_error_times k 9 {CODEX_400}")
    assert len(r.prompts()) == 1, "malformed is terminal"
    assert "malformed" in reply.text and "/compact" in reply.text
    assert not [t for t in shown if "invalid_request_error" in t or "{" in t]


async def test_an_empty_answer_to_a_retry_is_the_failure_again(relay: RelayFactory) -> None:
    """claude-agent-acp 0.23.1 after a 429: the retried prompt ends end_turn with nothing at all."""
    r = await relay()
    reply = await r.ask(f"fail_times t 1 -32603 {THROTTLED}\nstop end_turn")
    assert len(r.prompts()) == 3, "each empty retry counts as the failure: the ladder went on"
    assert reply.text.count(wording.retry_gave_up(3)) == 1
    assert "rate-limiting" in reply.text, "the last error's prose"
    assert wording.EMPTY_ANSWER not in reply.text
    assert wording.RETRY_SUCCEEDED not in reply.text


async def test_an_empty_retry_then_an_answer(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask(f"fail_times a 1 -32603 {THROTTLED}\nempty_times b 1\ntext the answer")
    assert len(r.prompts()) == 3
    assert "the answer" in reply.text and wording.RETRY_SUCCEEDED in reply.text


async def test_an_empty_first_turn_says_so(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("stop end_turn")
    assert len(r.prompts()) == 1, "nothing failed: nothing to retry"
    assert wording.EMPTY_ANSWER in reply.text


async def test_an_api_error_chunk_never_flashes_before_its_error(relay: RelayFactory) -> None:
    r = await relay()
    shown = watch(r)
    # the pause gives the streamer every chance to post the chunk before the error arrives
    reply = await r.ask(f"text {CLAUDE_400}\nsleep 0.3\nerror_data -32603 {CLAUDE_400_ERROR}")
    assert "malformed" in reply.text
    assert shown and not [t for t in shown if "API Error" in t]


async def test_the_agents_own_words_for_its_auth_error_are_not_shown_with_the_prose(relay: RelayFactory) -> None:
    """claude-agent-acp 0.101 streams "Invalid API key · Fix external API key", then -32000."""
    r = await relay()
    shown = watch(r)
    reply = await r.ask("text Invalid API key · Fix external API key\nsleep 0.2\nerror -32000 Authentication required")
    assert "not signed in" in reply.text
    assert not [t for t in shown if "Fix external API key" in t]


async def test_an_answer_that_starts_like_an_error_is_shown_whole(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("text Rate limits protect the API.\ntext  Here is how they work.")
    assert "Rate limits protect the API. Here is how they work." in reply.text
    one = await r.ask("text The request was rate-limited yesterday.")
    assert "The request was rate-limited yesterday." in one.text, "released when the turn ends"


async def test_a_refusal_explained_in_text_shows_the_explanation_and_the_card_once(relay: RelayFactory) -> None:
    """claude-agent-acp 0.101: the provider's explanation streams as text, then stopReason refusal."""
    r = await relay()
    why = ("API Error: Opus 5.5's safeguards flagged this message (https://www.anthropic.com/legal/aup). "
           "Try rephrasing the request in a new session or change your model.")
    reply = await r.ask(f"text {why}\nstop refusal")
    assert len(r.prompts()) == 1
    assert reply.text.count("safeguards flagged this message") == 1
    assert reply.text.count(wording.REFUSAL_LEAD) == 1
