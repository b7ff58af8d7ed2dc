"""An agent that ignores session/cancel: the stop must not leave the conversation stuck behind a
turn that never ends, and the person is told plainly what happened."""

from __future__ import annotations

from core.engine import wording

from .conftest import RelayFactory, until


async def test_a_stop_the_agent_never_confirms_sets_the_session_aside_and_the_next_message_works(
        relay: RelayFactory) -> None:
    r = await relay(cancel_wait_s=0.3)  # how long a stop waits for the agent to end the turn
    msg = await r.send("deaf working on it")
    await until(lambda: r.replies_to(msg) and "working on it" in r.reply_to(msg).text, what="the turn streams")
    stuck = r.session_id()

    await r.send("/stop")
    assert wording.STOP_UNCONFIRMED in r.texts()
    assert wording.STOPPED in r.reply_to(msg).text

    after = await r.ask("text a fresh answer")
    assert "a fresh answer" in after.text  # not "the agent is still working on the previous message"
    assert r.session_id() != stuck
