"""The hold-back of text that reads like a raw provider error (pure: no agent)."""

from __future__ import annotations

from core.acp.client import AcpAuthRequired, AcpError
from core.acp.types import TextChunk, TurnEnded, UsageUpdate
from core.engine.holdback import RawErrorHold, is_echo, reads_like_raw_error


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
