"""Stop, approvals, access control, the queue and concurrency, through a real engine.

what-users-hit 7 (a stop that does not stop), 8 (approval buttons), 9 (permission loops on a
surface without buttons).
"""

from __future__ import annotations

from core.engine import wording
from core.engine.surface import Button, PressResult
from tests.engine.conftest import KEY, Relay, RelayFactory, make_surface, until
from tests.fakes.memory_surface import StoredMessage


def approval_messages(r: Relay) -> list[StoredMessage]:
    return [m for m in r.messages() if m.text.startswith("The agent wants to run")]


def button(message: StoredMessage, label: str) -> Button:
    [found] = [b for b in message.buttons if b.label == label]
    return found


async def wait_approval(r: Relay, count: int = 1) -> StoredMessage:
    await until(lambda: len(approval_messages(r)) >= count, what=f"{count} approval message(s)")
    return approval_messages(r)[count - 1]


# -- stop ----------------------------------------------------------------------------------------


async def test_stop_really_stops_the_turn_before_saying_stopped(relay: RelayFactory) -> None:
    r = await relay()
    seen: list[tuple[str, bool, bool]] = []  # (text, conversation busy, agent turn in flight)

    def observe(method: str, key: str, text: str) -> None:
        if "Stopped." in text:
            conv = r.conv()
            session = conv.session
            seen.append((text, conv.busy, session is not None and session.busy))

    r.surface.observers.append(observe)
    msg = await r.send("text working on it\nhang")
    await until(lambda: r.replies_to(msg) and "working" in r.reply_to(msg).text, what="the turn streams")
    assert r.surface.typing_active.get(KEY) is True

    await r.send("/stop")
    assert r.conv().busy is False, "the stop command returns only once the turn has ended"
    assert "session/cancel" in r.methods()
    assert r.surface.typing_active.get(KEY) is False, "the typing indicator is cleared"
    assert seen, "the person is told it stopped"
    assert not any(agent_busy for _, _, agent_busy in seen), "never 'Stopped.' while the agent runs on"
    assert wording.STOPPED in r.reply_to(msg).text, "the stopped reply itself says so"
    assert sum(wording.STOPPED in t for t in r.texts()) == 1, "'Stopped.' is shown once, not twice"
    assert "working on it" in r.reply_to(msg).text, "what was streamed before the stop stays"

    after = await r.ask("text still here")
    assert "still here" in after.text, "the next prompt works normally after a stop"
    assert wording.EMPTY_ANSWER not in after.text


async def test_stop_with_nothing_running_says_so(relay: RelayFactory) -> None:
    r = await relay()
    await r.send("/stop")
    assert r.texts() == [wording.NOTHING_TO_STOP]


async def test_stop_answers_a_pending_approval_as_cancelled(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("tool t1 execute rm -rf build\npermission t1")
    allow = button(await wait_approval(r), "Allow once")
    await r.send("/stop")
    await r.idle()
    await until(lambda: "Cancelled" in approval_messages(r)[0].text, what="approval marked cancelled")
    assert not approval_messages(r)[0].buttons, "no buttons left to tap"
    before = len(r.messages())
    assert await r.press(allow.token) == PressResult("expired", wording.PRESS_EXPIRED)
    assert len(r.messages()) == before, "the tap is answered where it was made, not with a chat message"
    assert "permission:selected:allow" not in r.answer(msg)


# -- approvals -----------------------------------------------------------------------------------


async def test_a_stale_tap_is_answered_expired_and_changes_nothing(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("tool t1 execute ls\npermission t1\ntext after the tool")
    approval = await wait_approval(r)
    allow = button(approval, "Allow once")
    deny = button(approval, "Deny")
    await r.press(allow.token)
    await r.idle()
    assert "permission:selected:allow-once" in r.answer(msg)
    await until(lambda: "Allowed once" in approval_messages(r)[0].text, what="approval settled")

    before = [m.text for m in r.messages()]
    expired = PressResult("expired", wording.PRESS_EXPIRED)
    assert await r.press(allow.token) == expired  # the same tap again
    assert await r.press(deny.token) == expired  # another button of the decided approval
    assert [m.text for m in r.messages()] == before, "a stale tap posts nothing and edits nothing"
    assert "Allowed once" in approval_messages(r)[0].text, "the decision is not changed"
    answers = [f for f in r.frames() if "result" in f and "outcome" in (f.get("result") or {})]
    assert len(answers) == 1, "the agent received exactly one answer"


async def test_a_tap_from_another_conversation_is_expired(relay: RelayFactory) -> None:
    r = await relay()
    await r.send("permission t1")
    approval = await wait_approval(r)
    result = await r.press(button(approval, "Allow once").token, key="memory:other")
    assert result == PressResult("expired", wording.PRESS_EXPIRED)
    assert r.texts("memory:other") == [], "nothing is posted in the other conversation"
    assert r.conv().busy, "the approval is still open"
    await r.press(button(approval, "Deny").token)
    await r.idle()


async def test_an_unanswered_approval_expires_and_is_denied(relay: RelayFactory) -> None:
    r = await relay(timeouts={"approval_s": 0.3})
    msg = await r.send("tool t1 edit write a file\npermission t1")
    allow = button(await wait_approval(r), "Allow once")
    await r.idle()
    assert "permission:selected:reject" in r.answer(msg)
    await until(lambda: "No answer in time" in approval_messages(r)[0].text, what="approval marked timed out")
    assert await r.press(allow.token) == PressResult("expired", wording.PRESS_EXPIRED)


async def test_allow_for_this_session_is_remembered_for_that_command_only(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("tool a execute ls\npermission a\ntool b execute ls\npermission b")
    approval = await wait_approval(r)
    await r.press(button(approval, "Allow `ls` for this session").token)
    await r.idle()
    reply = r.answer(msg)
    # The agent is answered allow_once both times: the relay, not the agent, keeps the person's scope.
    assert reply.count("permission:selected:allow-once") == 2, "the same command was allowed without asking"
    assert len(approval_messages(r)) == 1

    # a later turn of the same session: still remembered for `ls`, not for another command or kind
    msg2 = await r.send("tool c execute ls\npermission c\ntool d execute pwd\npermission d")
    second = await wait_approval(r, 2)
    assert "pwd" in second.text, "another command is asked about"
    await r.press(button(second, "Deny").token)
    await r.idle()
    reply2 = r.answer(msg2)
    assert "permission:selected:allow-once" in reply2 and "permission:selected:reject" in reply2
    assert len(approval_messages(r)) == 2


async def test_a_reset_forgets_allow_for_this_session(relay: RelayFactory) -> None:
    r = await relay()
    await r.send("tool a execute ls\npermission a")
    await r.press(button(await wait_approval(r), "Allow `ls` for this session").token)
    await r.idle()
    await r.send("/new")
    await r.send("tool b execute ls\npermission b")
    second = await wait_approval(r, 2)
    await r.press(button(second, "Deny").token)
    await r.idle()


async def test_numbered_replies_decide_approvals_where_the_surface_has_no_buttons(relay: RelayFactory) -> None:
    r = await relay(surface=make_surface(can_buttons=False))
    msg = await r.send("tool a execute ls\npermission a\ntool b execute rm\npermission b")
    first = await wait_approval(r)
    assert not first.buttons
    assert wording.approval_numbered_hint("ls") in first.text
    await r.send("approve 1")
    second = await wait_approval(r, 2)
    assert not second.buttons
    await r.send("deny")
    await r.idle()
    reply = r.answer(msg)
    assert "permission:selected:allow-once" in reply and "permission:selected:reject" in reply
    assert r.prompts() == ["tool a execute ls\npermission a\ntool b execute rm\npermission b"], \
        "the numbered replies were answers, not prompts"


async def test_approve_two_allows_that_command_for_the_session_without_buttons(relay: RelayFactory) -> None:
    r = await relay(surface=make_surface(can_buttons=False))
    msg = await r.send("tool a execute ls\npermission a\ntool b execute ls\npermission b")
    await wait_approval(r)
    await r.send("approve 2")
    await r.idle()
    reply = r.answer(msg)
    assert reply.count("permission:selected:allow-once") == 2
    assert len(approval_messages(r)) == 1


# -- access --------------------------------------------------------------------------------------


async def test_an_unauthorised_person_is_refused_once_with_their_id_and_the_agent_is_never_started(
        relay: RelayFactory) -> None:
    r = await relay()
    await r.send("text let me in", user="intruder-99")
    assert r.texts() == [wording.unauthorised_text("intruder-99")]
    assert "intruder-99" in r.texts()[0]
    await r.send("text please", user="intruder-99")
    await r.send("/status", user="intruder-99")
    assert len(r.messages()) == 1, "later messages from them get nothing more"
    assert r.engine.pool.runtimes() == [] and r.engine.pool.spawned == 0, "no agent process"
    assert not r.record.exists(), "the agent was never contacted"
    assert r.store.unfinished_inbound() == [], "nothing of theirs waits to be replayed"


async def test_an_unauthorised_button_press_changes_nothing(relay: RelayFactory) -> None:
    r = await relay()
    await r.send("permission t1")
    approval = await wait_approval(r)
    await r.press(button(approval, "Allow once").token, user="intruder")
    assert r.conv().busy, "the approval is still open"
    await r.press(button(approval, "Deny").token)
    await r.idle()
    assert r.with_text("permission:selected:reject"), "only the allowed person's tap counted"


# -- queue and concurrency -----------------------------------------------------------------------


async def test_messages_sent_during_a_turn_are_queued_in_order_and_told_so(relay: RelayFactory) -> None:
    r = await relay()
    first = await r.send("text A\nsleep 1")  # (a stop would drop the queue: issue 22)
    await until(lambda: r.conv().session is not None and r.conv().session.busy, what="first turn running")
    second = await r.send("text B")
    third = await r.send("text C")
    assert r.texts()[-2:] == [wording.queued_text(1), wording.queued_text(2)]
    assert r.engine.status(KEY).queue_length == 2
    await r.idle()
    assert r.prompts() == ["text A\nsleep 1", "text B", "text C"], "processed in arrival order"
    assert "B" in r.reply_to(second).text and "C" in r.reply_to(third).text
    order = [m.reply_to for m in r.messages() if m.reply_to and m.origin is None]
    assert order == [first.message_id, second.message_id, third.message_id], "answers in arrival order"
    notices = [m.origin for m in r.messages() if m.origin is not None]
    assert notices == [second.message_id, third.message_id], "each queued notice answers its own message"


async def test_beyond_the_queue_bound_a_message_is_refused_clearly(relay: RelayFactory) -> None:
    r = await relay(engine={"queue_limit": 1})
    await r.send("sleep 1")  # (a stop would drop the queue: issue 22)
    await until(lambda: r.conv().session is not None and r.conv().session.busy, what="turn running")
    queued = await r.send("text B")
    await r.send("text C")
    assert r.texts()[-2:] == [wording.queued_text(1), wording.queue_full_text(1)]
    await r.idle()
    assert r.prompts() == ["sleep 1", "text B"], "the refused message never reaches the agent"
    assert "B" in r.reply_to(queued).text
    assert r.store.unfinished_inbound() == []


async def test_different_conversations_run_their_turns_at_the_same_time(relay: RelayFactory) -> None:
    r = await relay()
    a = await r.send("sleep 0.5\ntext from A", key="memory:a")
    b = await r.send("sleep 0.5\ntext from B", key="memory:b")

    def both_in_flight() -> bool:
        convs = [r.engine.conversations.get(k) for k in ("memory:a", "memory:b")]
        return all(c is not None and c.session is not None and c.session.busy for c in convs)

    await until(both_in_flight, what="both turns in flight at once")
    await r.idle("memory:a")
    await r.idle("memory:b")
    assert "from A" in r.reply_to(a).text and "from B" in r.reply_to(b).text
    assert len(r.engine.pool.runtimes()) == 1, "one agent process serves both conversations"
    sessions = {f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/prompt"}
    assert len(sessions) == 2, "each conversation has its own ACP session"


# -- compact -------------------------------------------------------------------------------------


async def test_compact_is_sent_to_the_agent_as_a_prompt_and_reported(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text hello")
    reply = await r.ask("/compact")
    assert r.prompts()[-1] == "/compact"
    assert wording.COMPACTED in reply.text
    assert "echo: /compact" in reply.text
