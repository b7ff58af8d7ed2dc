"""The agent's text that is really an error (``core.acp.error_text``), the pure parts: the hold-back
of a first chunk that reads like a raw provider error, telling an echo of the error from an answer,
and taking an echo back. The session's part (codex's systemError, Copilot's status lines) is tested
in test_acp_thread_failure.py against the scripted agent."""

from __future__ import annotations

from core.acp.client import AcpAuthRequired, AcpError, AcpTimeoutError
from core.acp.error_text import AttemptText, RawErrorHold, is_echo, reads_like_raw_error, squash, strip_echo
from core.acp.types import TextChunk, TurnEnded, UsageUpdate


def test_raw_provider_errors_read_as_such() -> None:
    assert reads_like_raw_error("API Error: 400 Improperly formed request.")
    assert reads_like_raw_error('{"type": "error", "error": {"type": "overloaded_error"}}')
    assert reads_like_raw_error("Invalid API key · Fix external API key")
    assert not reads_like_raw_error("Hello from the loopback mock.")
    assert not reads_like_raw_error("  \n")


def test_a_held_chunk_waits_for_more_text_or_the_end_of_the_turn() -> None:
    hold = RawErrorHold()
    usage = UsageUpdate(1, 10)
    assert hold.take(TextChunk("API Error: 429")) == []
    assert hold.take(usage) == [usage], "other events are not held"
    assert hold.take(TextChunk("\n")) == [], "still nothing but the error"
    assert hold.take(TextChunk("But here is your answer.")) == [
        TextChunk("API Error: 429"), TextChunk("\n"), TextChunk("But here is your answer.")]
    assert hold.take(TextChunk("API Error: later")) == [TextChunk("API Error: later")], "only the start is held"
    end = RawErrorHold()
    assert end.take(TextChunk("Rate limits exist.")) == []
    assert end.take(TurnEnded("end_turn")) == [TextChunk("Rate limits exist."), TurnEnded("end_turn")]


def test_whitespace_first_does_not_end_the_hold() -> None:
    hold = RawErrorHold()
    assert hold.take(TextChunk("\n")) == [TextChunk("\n")]
    assert hold.take(TextChunk("API Error: 500")) == []
    assert hold.release() == [TextChunk("API Error: 500")]
    assert hold.release() == []


def test_dropped_text_is_gone() -> None:
    hold = RawErrorHold()
    hold.take(TextChunk("API Error: 400 Improperly formed request."))
    hold.drop()
    assert hold.take(TurnEnded("end_turn")) == [TurnEnded("end_turn")]


def test_an_echo_is_the_errors_words_or_on_its_own_the_same_failure() -> None:
    auth = AcpAuthRequired("Authentication required", rpc_code=-32000)
    assert is_echo("Invalid API key · Fix external API key", auth)
    overloaded = AcpError("Internal error: Overloaded", rpc_code=-32603)
    assert not is_echo("Invalid API key · Fix external API key", overloaded)
    assert is_echo("API Error: 400 Improperly formed request.",
                   AcpError("Internal error: API Error: 400 Improperly formed request.", rpc_code=-32603))
    assert not is_echo("Here is half an answer", auth)


MALFORMED = AcpError("Internal error: API Error: 400 Improperly formed request.", rpc_code=-32603)


def test_an_attempt_whose_only_text_echoed_its_error_takes_it_back() -> None:
    attempt = AttemptText()
    assert attempt.take(TextChunk("Invalid API key · Fix external API key")) == []
    assert attempt.failed(AcpAuthRequired("Authentication required"), tool_ran=False) == (
        "Invalid API key · Fix external API key", [])
    assert attempt.take(TurnEnded("end_turn")) == [TurnEnded("end_turn")], "what was held is gone"


def test_held_text_that_was_no_echo_is_shown_after_all() -> None:
    attempt = AttemptText()
    assert attempt.take(TextChunk("API Error: 500")) == []
    assert attempt.failed(AcpTimeoutError("no answer within 5s"), tool_ran=False) == ("", [TextChunk("API Error: 500")])


def test_an_echo_after_a_tool_ran_is_part_of_what_happened() -> None:
    attempt = AttemptText()
    attempt.take(TextChunk("API Error: 400 Improperly formed request."))
    assert attempt.failed(MALFORMED, tool_ran=True) == ("", [TextChunk("API Error: 400 Improperly formed request.")])


def test_a_new_attempt_starts_with_no_text_and_an_open_hold() -> None:
    attempt = AttemptText()
    attempt.take(TextChunk("half an answer"))
    attempt.reset()
    assert attempt.text == ""
    assert attempt.take(TextChunk("API Error: 429")) == [], "the first chunk of the new attempt is held again"


def test_strip_echo_takes_back_the_trailing_sentences_the_error_repeats() -> None:
    needle = squash(MALFORMED.message)
    assert strip_echo("Here is the start.\nAPI Error: 400 Improperly formed request.", needle) == "Here is the start."
    assert strip_echo("The build ended with an Error", squash("Error")) == "The build ended with an Error", (
        "a word too short to be an echo stays")
    assert strip_echo("Nothing repeated here.", needle) == "Nothing repeated here."
