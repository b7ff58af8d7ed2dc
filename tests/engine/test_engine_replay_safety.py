"""Replay after a restart never runs a tool twice unasked, and an interrupted reply says why it stopped.

``r.restart()`` closes the engine mid-turn (the turn is cancelled, its message stays unfinished in
the store) and starts a new engine on the same store file. A message whose turn may already have
run a tool that changes something (the person allowed one, or the agent is trusted with
``tool_gate: allow`` and announced one) is not sent again by itself: the person is asked, with the
tools listed, and decides with a button (or a numbered reply). A turn that only read is sent again
silently. A message interrupted while an approval was still pending is replayed;
tests/engine/test_engine_sessions.py covers that case.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config import RelayConfig
from core.engine import wording
from core.engine.messages import InboundMessage
from core.store import Store
from tests.engine.conftest import Relay, RelayFactory, make_surface, until
from tests.fakes.memory_surface import StoredMessage


def approval_messages(r: Relay) -> list[StoredMessage]:
    return [m for m in r.messages() if m.text.startswith("The agent wants to run")]


@dataclass
class GatedRelay(Relay):
    """The conftest ``Relay`` with the fake agent's ``tool_gate`` set (the fixture's section
    overrides replace the whole ``agents.fake`` entry, so they cannot set just this field)."""

    tool_gate: str = "ask"

    def config(self) -> RelayConfig:
        cfg = super().config()
        cfg.agents["fake"] = cfg.agents["fake"].model_copy(update={"tool_gate": self.tool_gate})
        return cfg


@pytest.fixture
async def allow_relay(tmp_path: Path) -> AsyncIterator[GatedRelay]:
    r = GatedRelay(tmp_path, make_surface(), tool_gate="allow")
    await r.start()
    yield r
    await r.close()


def question(r: Relay) -> StoredMessage:
    [asked] = [m for m in r.messages() if m.text.startswith("The relay restarted while your message")]
    return asked


def button(msg: StoredMessage, label: str) -> str:
    return next(b.token for b in msg.buttons if b.label == label)


async def allowed_then_waiting(relay: RelayFactory) -> tuple[Relay, str, InboundMessage]:
    """A relay whose turn ran a tool the person allowed, and then waits (the script, its message)."""
    r = await relay()
    script = "tool t1 execute touch x\npermission t1\nsleep 30"
    msg = await r.send(script)
    await until(lambda: approval_messages(r) and approval_messages(r)[0].buttons, what="the approval request")
    await r.press(button(approval_messages(r)[0], "Allow once"))
    await until(lambda: "permission:selected:allow-once" in r.answer(msg), what="the tool was allowed")
    return r, script, msg


async def test_after_a_restart_a_turn_whose_allowed_tool_ran_is_not_sent_again_without_asking(
        relay: RelayFactory) -> None:
    r, script, msg = await allowed_then_waiting(relay)
    [unfinished] = r.store.unfinished_inbound()
    assert unfinished.message_id == msg.message_id
    assert (unfinished.progress, unfinished.tools) == ("tool", (("touch x", "execute"),))

    await r.restart()  # mid-sleep: the turn is cancelled, its message is still unfinished
    asked = question(r)
    assert "touch x (execute)" in asked.text, "the person sees which tool already ran"
    assert [b.label for b in asked.buttons] == [wording.RESEND_LABEL, wording.LEAVE_LABEL]
    assert asked.reply_to == msg.message_id
    assert r.is_idle(), "nothing was sent to the agent again"
    assert r.store.unfinished_inbound() == [], "a second restart does not ask again"

    resend = button(asked, wording.RESEND_LABEL)
    result = await r.press(button(asked, wording.LEAVE_LABEL))
    assert (result.outcome, result.text) == ("resolved", wording.LEFT_AS_IT_IS)
    await until(lambda: not question(r).buttons, what="the question shows the decision")
    assert question(r).text.endswith(wording.LEFT_AS_IT_IS)
    after = await r.ask("text next question")
    assert "next question" in after.text, "the conversation carries on normally"
    assert r.prompts().count(script) == 1, "the agent received the interrupted prompt once in total"
    assert (await r.press(resend)).outcome == "expired", "the other button does nothing any more"


async def test_sent_again_on_request_its_answer_continues_where_the_person_saw_it(
        allow_relay: GatedRelay) -> None:
    r = allow_relay
    script = "tool t1 execute touch x\ntext working on it\nsleep 30"  # the gate lets the tool run
    msg = await r.send(script)
    await until(lambda: r.replies_to(msg) and "working on it" in r.reply_to(msg).text, what="the answer streams")
    first = r.reply_to(msg).message_id
    await until(lambda: [u.tools for u in r.store.unfinished_inbound()] == [(("touch x", "execute"),)],
                what="the tool call's start is journaled")

    await r.restart()
    assert r.is_idle() and r.store.unfinished_inbound() == []
    asked = question(r)
    assert (await r.press(button(asked, wording.RESEND_LABEL))).text == wording.RESENT
    await until(lambda: r.prompts().count(script) == 2, what="the message is sent to the agent again")
    assert [u.message_id for u in r.store.unfinished_inbound()] == [msg.message_id], "it is being answered again"
    await until(lambda: question(r).text.endswith(wording.RESENT), what="the question shows the decision")
    await until(lambda: r.surface.messages[first].edits >= 2 and "working on it" in r.surface.messages[first].text,
                what="the answer is written again into its first message")
    assert len(r.with_text("working on it")) == 1, "no second copy of the answer"


async def test_without_buttons_a_numbered_reply_answers_the_question(tmp_path: Path) -> None:
    r = GatedRelay(tmp_path, make_surface(can_buttons=False), tool_gate="allow")
    await r.start()
    try:
        script = "tool t1 edit Edit notes.md\nsleep 30"
        msg = await r.send(script)
        await until(lambda: [u.progress for u in r.store.unfinished_inbound()] == ["tool"],
                    what="the tool is journaled")
        await r.restart()
        asked = question(r)
        assert not asked.buttons and wording.RESEND_NUMBERED_HINT in asked.text
        assert "Edit notes.md (edit)" in asked.text
        await r.send("2 ")  # not a prompt: the answer to the question
        assert question(r).text.endswith(wording.LEFT_AS_IT_IS)
        assert r.prompts().count(script) == 1 and "2 " not in r.prompts()
        assert msg.message_id not in {u.message_id for u in r.store.unfinished_inbound()}
        assert await r.ask("text then a prompt") is not None
        await r.send("1")  # no question is open: an ordinary prompt
        await until(lambda: "1" in r.prompts(), what="'1' reaches the agent as a prompt")
    finally:
        await r.close()


async def test_a_turn_that_only_read_files_is_sent_again_silently(allow_relay: GatedRelay) -> None:
    r = allow_relay
    script = "tool t1 read Read main.py\ntool_update t1 completed\nsleep 30"
    msg = await r.send(script)
    await until(lambda: r.replies_to(msg) and "main.py" in r.reply_to(msg).text, what="the tool line is shown")
    assert [(u.progress, u.tools) for u in r.store.unfinished_inbound()] == [("", ())], "reading changes nothing"
    await r.restart()
    await until(lambda: r.prompts().count(script) == 2, what="the message is answered again")
    assert not [m for m in r.messages() if m.text.startswith("The relay restarted while your message")]


async def test_with_tool_gate_ask_an_announced_tool_call_alone_does_not_mark_progress(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("tool t1 execute touch x\ntext tool announced\nhang")
    await until(lambda: r.replies_to(msg) and "tool announced" in r.reply_to(msg).text, what="the turn streams")
    assert [u.progress for u in r.store.unfinished_inbound()] == [""], "no tool can have run without an answer"


async def test_a_reply_cut_short_by_a_shutdown_says_the_relay_restarted(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("text part one\nhang")
    await until(lambda: r.replies_to(msg) and "part one" in r.reply_to(msg).text, what="the turn streams")
    interrupted = r.reply_to(msg).message_id

    await r.close()  # a shutdown: the running turn is cancelled and its reply finished
    reply = r.surface.messages[interrupted]
    assert "part one" in reply.text, "what streamed stays"
    assert wording.INTERRUPTED_BY_RESTART in reply.text
    assert wording.STOPPED not in reply.text, "nobody stopped it"
    assert "Something went wrong" not in reply.text
    with Store.open(r.db) as store:
        assert [u.message_id for u in store.unfinished_inbound()] == [msg.message_id], "kept for a replay"


async def test_a_session_lost_while_the_restart_asks_is_said_with_the_next_answer(
        relay: RelayFactory, tmp_path: Path) -> None:
    """The session is reattached while the person decides; one the agent lost is replaced then, and the
    sentence saying so comes with the next answer (it was lost with the reattaching)."""
    r, _, _ = await allowed_then_waiting(relay)

    await r.restart(state_dir=tmp_path / "empty-agent-state")  # the agent lost its sessions
    await until(lambda: r.methods().count("session/new") == 2, what="a new session, while the question waits")
    await r.press(button(question(r), wording.LEAVE_LABEL))
    after = await r.ask("text next question")
    assert after.text.startswith(wording.SESSION_LOST)
    assert "next question" in after.text
    assert r.methods().count("session/new") == 2
