"""Regressions found by testing the relay end to end, each pinned through a real engine.

Every test here failed before its fix: a timed-out turn on a deaf agent, a model switch racing the
first turn, context percentages that are not finite numbers, a closing runtime picked up again, a
late typed approval, a removed agent in /status, the agent dying during an approval, the "allow
for this session" scope, a surface whose typing indicator raises, and a usage count too large
for a float.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import signal
import time
from typing import Any

import pytest

from core.engine import wording
from tests.engine.conftest import KEY, ObservingSurface, Relay, RelayFactory, make_surface, until
from tests.fakes.memory_surface import StoredMessage

APPROVAL = "The agent wants to run"


def approval_messages(r: Relay) -> list[StoredMessage]:
    return [m for m in r.messages() if m.text.startswith(APPROVAL)]


async def wait_approval(r: Relay) -> StoredMessage:
    await until(lambda: approval_messages(r), what="the approval message")
    return approval_messages(r)[0]


# -- 1. a timeout on an agent that ignores session/cancel -----------------------------------------


async def test_a_timed_out_turn_on_a_deaf_agent_does_not_wedge_the_conversation(relay: RelayFactory) -> None:
    # The deaf agent never ends its turn; do not wait long for it.
    r = await relay(timeouts={"prompt_s": 0.3}, cancel_wait_s=0.2)
    first = await r.ask("deaf still thinking")
    assert "timed out" in first.text
    first_session = r.session_id()

    after = await r.ask("text the next answer")
    assert "the next answer" in after.text, f"a real answer, not 'still working': {after.text!r}"
    assert wording.SESSION_SET_ASIDE in "\n".join(r.texts()), "the person is told the session was set aside"
    assert r.methods().count("session/new") == 2, "the next message runs on a new session"
    assert r.session_id() != first_session
    again = await r.ask("text and the one after")
    assert "and the one after" in again.text


# -- 3. a model switch racing the first message ---------------------------------------------------


@pytest.mark.parametrize("order", ["model-first", "message-first"])
async def test_a_model_switch_racing_the_first_turn_binds_one_session(relay: RelayFactory, order: str) -> None:
    r = await relay("--models", "a,b")
    if order == "model-first":
        switch = asyncio.create_task(r.engine.set_model(KEY, "b"))
        await asyncio.sleep(0)
        await r.send("text first answer")
    else:
        await r.send("text first answer")
        switch = asyncio.create_task(r.engine.set_model(KEY, "b"))
    async with asyncio.timeout(15):
        await switch
    await r.idle()

    assert r.methods().count("session/new") == 1, "one session, not one per caller"
    [prompt] = [f for f in r.frames() if f.get("method") == "session/prompt"]
    [set_model] = [f for f in r.frames() if f.get("method") == "session/set_model"]
    assert set_model["params"]["modelId"] == "b"
    assert prompt["params"]["sessionId"] == set_model["params"]["sessionId"] == r.session_id(), \
        "the turn ran on the session that got model b"
    assert r.engine.status(KEY).model == "b"


# -- 4. context percentages that are not finite ---------------------------------------------------


@pytest.mark.parametrize("value", ["1e400", "Infinity", "-Infinity", "NaN"])
async def test_a_non_finite_context_percentage_never_breaks_the_answer_or_status(
        relay: RelayFactory, value: str) -> None:
    r = await relay()
    reply = await r.ask(f'text hello\nkiro_meta {{"contextUsagePercentage": {value}}}\ntext world')
    assert "helloworld" in reply.text and "⏱" in reply.text, f"the final answer is delivered: {reply.text!r}"
    assert "problem it did not expect" not in reply.text
    pct = r.engine.status(KEY).context_pct
    assert pct is None or math.isfinite(pct)
    await r.send("/status")
    assert r.texts()[-1].startswith("Agent:"), "/status answers"
    after = await r.ask("text next")
    assert "next" in after.text and "⏱" in after.text


@pytest.mark.parametrize("usage", ["-5 10", "5 -10"])
async def test_a_usage_update_that_is_no_fraction_leaves_the_context_unknown(relay: RelayFactory, usage: str) -> None:
    r = await relay()
    reply = await r.ask(f"text hello\nusage {usage}\ntext world")
    assert "helloworld" in reply.text and "⏱" in reply.text
    assert "context -" not in reply.text, f"no negative percentage: {reply.text!r}"
    assert r.engine.status(KEY).context_pct is None


async def test_a_usage_update_with_a_huge_used_count_never_breaks_the_answer(relay: RelayFactory) -> None:
    r = await relay()
    huge = "1" + "0" * 400  # valid JSON; Python parses it as an int larger than any float
    update = f'{{"sessionUpdate": "usage_update", "used": {huge}, "size": 1}}'
    reply = await r.ask(f"text hello\nupdate {update}\ntext world")
    assert "helloworld" in reply.text and "⏱" in reply.text, f"the final answer is delivered: {reply.text!r}"
    assert "problem it did not expect" not in reply.text
    pct = r.engine.status(KEY).context_pct
    assert pct is None or math.isfinite(pct)


# -- 5. a deeply nested JSON line -----------------------------------------------------------------


async def test_a_deeply_nested_json_line_costs_one_line_not_the_runtime(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text warm")
    [runtime] = r.engine.pool.runtimes()
    deep = "[" * 100_000  # json.loads raises RecursionError, not ValueError
    for line in (deep, '{"jsonrpc":"2.0","method":"x","params":' + deep):  # a bare value; a would-be frame
        reply = await r.ask(f"text before\nraw {line}\ntext after")
        assert "before" in reply.text and "after" in reply.text, f"the turn went on: {reply.text[:200]!r}"
        assert runtime.alive and r.engine.pool.runtimes() == [runtime], "the same agent process still serves"
    assert r.engine.pool.spawned == 1


# -- 6. a message arriving while the reaper closes the idle runtime -------------------------------


async def test_a_message_while_the_reaper_closes_the_runtime_gets_a_clean_answer(relay: RelayFactory) -> None:
    # --ignore-eof: closing takes the grace period, so the message surely lands while it closes
    r = await relay("--ignore-eof")
    await r.ask("text warm")
    [old] = r.engine.pool.runtimes()
    reaping = asyncio.create_task(r.engine.pool.reap(now=time.monotonic() + 3600))
    await until(lambda: not r.engine.pool.runtimes(), what="the reaper took the runtime out of the pool")
    assert old.process.alive, "the old agent is still closing"

    reply = await r.ask("text the answer")
    assert "the answer" in reply.text
    assert wording.RETRY_SUCCEEDED not in reply.text and "Retry" not in reply.text, \
        f"no failed attempt on the closing runtime: {reply.text!r}"
    assert r.prompts() == ["text warm", "text the answer"], "the prompt was sent once"
    assert r.engine.pool.runtimes() and r.engine.pool.runtimes()[0] is not old, "answered on a fresh runtime"
    async with asyncio.timeout(15):
        assert await reaping == 1


# -- 8. a late typed approval ---------------------------------------------------------------------


async def test_a_late_typed_approval_is_expired_and_never_sent_as_a_prompt(relay: RelayFactory) -> None:
    r = await relay(surface=make_surface(can_buttons=False), timeouts={"approval_s": 0.2})
    script = "tool t1 execute rm -rf build\npermission t1\ntext after"
    msg = await r.send(script)
    await r.idle()  # the approval timed out and was denied
    assert "permission:selected:reject" in r.answer(msg)

    for late in ("approve 1", "deny"):
        before = len(r.texts())
        await r.send(late)
        await r.idle()
        assert r.texts()[before:] == [wording.APPROVAL_EXPIRED], f"{late!r} is answered expired"
    assert r.prompts() == [script], "no late answer reached the agent as a prompt"
    assert r.store.unfinished_inbound() == []


# -- 9. status of a conversation whose agent was removed from the config --------------------------


async def test_status_of_a_conversation_whose_agent_was_removed_names_the_default(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text hi")
    rec = r.store.get_conversation(KEY)
    assert rec is not None and rec.agent == "fake"
    await r.restart()  # a fresh engine: nothing of the conversation is in memory, only the store
    r.store.save_conversation(dataclasses.replace(rec, agent="removed-agent", cwd=""))

    status = r.engine.status(KEY)  # the dashboard's GET /status: never a ConfigError
    assert status.agent == "fake"
    assert status.cwd == str(r.workdir.resolve())
    await r.send("/status")
    assert r.texts()[-1].startswith("Agent: fake")


# -- 10. the agent dies while an approval waits ---------------------------------------------------


async def test_the_agent_dying_during_an_approval_settles_it_as_cancelled(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("tool t1 execute rm -rf build\npermission t1\ntext after")
    approval = await wait_approval(r)
    assert approval.buttons
    await until(lambda: r.conv().busy, what="the approval is open")
    [runtime] = r.engine.pool.runtimes()
    os.kill(runtime.pid, signal.SIGKILL)  # the fake agent this test started
    await r.idle()

    await until(lambda: not approval_messages(r)[0].buttons, what="the approval settled")
    text = approval_messages(r)[0].text
    assert "No answer in time" not in text, f"not a timeout: {text!r}"
    cancelled = wording.approval_outcome_text("cancelled")[:-1]  # "Cancelled because ..." without the "."
    assert cancelled in text
    assert "permission:selected" not in r.answer(msg)


# -- 11. a surface whose typing indicator raises something unexpected -----------------------------


class TypingBugSurface(ObservingSurface):
    """A surface whose typing() has a bug: it raises a plain exception, not a DeliveryError."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.typing_calls = 0

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        self.typing_calls += 1
        raise ConnectionResetError("typing endpoint reset")


async def test_a_surface_whose_typing_raises_still_gets_its_answer(relay: RelayFactory) -> None:
    base = make_surface(can_typing=True)
    surface = TypingBugSurface(capabilities=base.capabilities)
    r = await relay(surface=surface)
    reply = await r.ask("text the answer")
    assert surface.typing_calls >= 1, "the typing indicator was tried"
    assert "the answer" in reply.text and "⏱" in reply.text, f"the answer arrived: {reply.text!r}"
    assert "problem it did not expect" not in reply.text
    second = await r.ask("text another")
    assert "another" in second.text


# -- 12. "allow for this session" names what it covers --------------------------------------------
# (issue 17: it covers the same command, not every call of a kind, and the button says so: see
# test_engine_gate.py for the scope itself)


async def test_allow_for_this_session_says_it_covers_that_command(relay: RelayFactory) -> None:
    r = await relay()
    await r.send("tool t1 execute ls\npermission t1\ntext listed")
    approval = await wait_approval(r)
    [always] = [b for b in approval.buttons if b.label == "Allow `ls` for this session"]
    await r.press(always.token)
    await r.idle()
    await until(lambda: "Allowed for this session" in approval_messages(r)[0].text, what="the approval settled")
    assert "the same command runs again without asking" in approval_messages(r)[0].text
    assert "every other" not in approval_messages(r)[0].text


def test_the_allow_always_outcome_line_names_its_scope() -> None:
    assert "every other" not in wording.approval_outcome_text("allow_always", "ls", "execute", "ls")
    assert "every other" not in wording.approval_outcome_text("allow_once", "ls", "execute", "ls")
    edit = wording.approval_outcome_text("allow_always", "Edit a.py", "edit", "a.py")
    assert edit == ("Allowed for this session: Edit a.py (the same edit of `a.py` runs again without asking; "
                    "anything else is asked first)")


async def test_a_message_with_nothing_in_it_is_told_so_and_never_prompted(relay: RelayFactory) -> None:
    """A surface that read no words in a message (and nothing attached) hands it over blank: the person
    reads that it was not sent, not that the agent wrote no reply to a prompt it never got; a message
    after it is answered as usual."""
    r = await relay()
    blank = await r.send("  \n")
    await r.idle()
    assert r.texts() == [wording.NOTHING_TO_SEND] and r.reply_to(blank).text == wording.NOTHING_TO_SEND
    assert "session/prompt" not in r.methods()
    assert r.store.unfinished_inbound() == [], "done with: not offered again after a restart"
    await r.ask("text hello")
    assert r.prompts() == ["text hello"]
