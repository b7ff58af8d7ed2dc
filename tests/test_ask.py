"""Pieces that need no agent: the refusal card (as ask and the chat render it) and ask's answer reader."""

from __future__ import annotations

import asyncio
import os

from core.acp._dispatch import refusal_from_error
from core.acp.types import RefusalInfo
from core.engine.wording import refusal_card_text
from core.terminal import read_answer

CLAUDE_023_REFUSAL = (
    "Internal error: API Error: Claude Code is unable to respond to this request, which appears to violate "
    "our Usage Policy (https://www.anthropic.com/legal/aup). If you are seeing this refusal repeatedly, "
    "try running /model claude-sonnet-4-20250514 to switch models."
)


def test_a_refusal_sentence_streamed_with_its_commands_is_not_repeated_on_the_card() -> None:
    # claude-agent-acp streams the error text before the error; the card's copy has its commands
    # described, so the two differ until the streamed text gets the same treatment.
    info = refusal_from_error(CLAUDE_023_REFUSAL)
    streamed = CLAUDE_023_REFUSAL.removeprefix("Internal error: ")
    card = refusal_card_text(info, streamed=streamed)
    assert "Why:" not in card and "Suggested model: claude-sonnet-4-20250514" in card
    assert "Why:" in refusal_card_text(info, streamed="something else entirely")


def test_a_bare_refusal_is_the_lead_line() -> None:
    assert refusal_card_text(RefusalInfo()) == "The model declined to answer this request."


async def test_reading_an_answer_can_be_cancelled_and_leaves_no_reader_behind() -> None:
    read_fd, write_fd = os.pipe()
    try:
        task = asyncio.create_task(read_answer(read_fd))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)
        assert task.cancelled()
        assert not asyncio.get_running_loop().remove_reader(read_fd)  # already removed
        os.write(write_fd, b"y\n")
        assert await asyncio.wait_for(read_answer(read_fd), 1.0) == "y\n"
        os.close(write_fd)
        write_fd = -1
        assert await asyncio.wait_for(read_answer(read_fd), 1.0) == ""  # end of input: deny
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
