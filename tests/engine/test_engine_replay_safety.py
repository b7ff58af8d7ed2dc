"""Replay after a restart never runs a tool twice, and an interrupted reply says why it stopped.

``r.restart()`` closes the engine mid-turn (the turn is cancelled, its message stays unfinished in
the store) and starts a new engine on the same store file. A message whose turn may already have
run a tool (the person allowed one, or the agent is trusted with ``tool_gate: allow`` and announced
one) is not sent again: the person is told instead. A message interrupted while an approval was
still pending is replayed; tests/engine/test_engine_sessions.py covers that case.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config import RelayConfig
from core.engine import wording
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


async def test_a_turn_interrupted_after_an_allowed_tool_is_not_replayed(relay: RelayFactory) -> None:
    r = await relay()
    script = "tool t1 execute touch x\npermission t1\nsleep 30"
    msg = await r.send(script)
    await until(lambda: approval_messages(r) and approval_messages(r)[0].buttons, what="the approval request")
    allow = next(b for b in approval_messages(r)[0].buttons if b.label == "Allow once")
    await r.press(allow.token)
    await until(lambda: "permission:selected:allow-once" in r.answer(msg), what="the tool was allowed")
    [unfinished] = r.store.unfinished_inbound()
    assert unfinished.message_id == msg.message_id
    assert unfinished.progress == "tool", "the store knows a tool may have run"

    await r.restart()  # mid-sleep: the turn is cancelled, its message is still unfinished
    assert r.is_idle(), "nothing was queued again after the restart"
    assert r.store.unfinished_inbound() == [], "the message is settled, not left to replay later"
    assert wording.NOT_REPLAYED_AFTER_TOOL in r.texts(), "the person is told it was not sent again"

    after = await r.ask("text next question")
    assert "next question" in after.text, "the conversation carries on normally"
    assert r.prompts().count(script) == 1, "the agent received the interrupted prompt once in total"
    assert r.texts().count(wording.NOT_REPLAYED_AFTER_TOOL) == 1


async def test_with_tool_gate_allow_an_announced_tool_call_marks_progress_and_blocks_replay(
        allow_relay: GatedRelay) -> None:
    r = allow_relay
    script = "tool t1 execute touch x\nsleep 30"  # no permission request: the gate lets it run
    msg = await r.send(script)
    await until(lambda: r.replies_to(msg) and "touch x" in r.reply_to(msg).text, what="the tool call is shown")
    await until(lambda: [u.progress for u in r.store.unfinished_inbound()] == ["tool"],
                what="the tool call's start marks progress")

    await r.restart()
    assert r.is_idle(), "nothing was queued again after the restart"
    assert r.store.unfinished_inbound() == []
    assert wording.NOT_REPLAYED_AFTER_TOOL in r.texts()
    after = await r.ask("text next question")
    assert "next question" in after.text
    assert r.prompts().count(script) == 1


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
