"""A turn that runs past ``timeouts.prompt_s``: the agent is told to stop, what streamed stays on
screen marked as incomplete, and the person reads why, once."""

from __future__ import annotations

from core.engine import wording

from .conftest import RelayFactory, until


async def test_a_prompt_timeout_keeps_the_partial_answer_marks_it_incomplete_and_says_why(
        relay: RelayFactory) -> None:
    r = await relay(timeouts={"prompt_s": 0.5})
    msg = await r.send("text the first half of the answer\nhang")
    await until(lambda: r.is_idle(), what="the timed-out turn to end")
    reply = r.reply_to(msg).text
    assert "the first half of the answer" in reply
    assert wording.PARTIAL_NOTE in reply
    assert reply.count("timed out") == 1
    assert "session/cancel" in r.methods()  # the agent was told to stop, not left running

    after = await r.ask("text next one")
    assert "next one" in after.text and wording.PARTIAL_NOTE not in after.text
