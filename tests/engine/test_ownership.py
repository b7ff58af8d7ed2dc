"""Relays sharing a PostgreSQL store, in one process: two engines, one database, one platform (a
MemorySurface both post to), each relay with its own fake agent process (its ``--record`` file shows
which relay's agent answered what) and the agents' session storage shared.

Whichever relay receives a message journals it; the conversation's owner answers, in order; a
conversation whose owner lost its lease goes to another relay, and the old owner goes silent.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.engine import edit_wording, wording
from core.engine import twoway_wording as tw
from core.engine.messages import PressResult
from core.engine.ownership import LEASE_PREFIX
from core.store import LeaseLost, Store
from tests.engine.conftest import KEY, USER, ObservingSurface, Relay, make_surface
from tests.postgres import PostgresServer
from tests.waiting import until

FOOTER = "⏱"


@dataclass
class PgRelay(Relay):
    """A ``Relay`` whose store is the shared PostgreSQL database at ``url``."""

    url: str = ""

    def open_store(self) -> Store:
        from core.store.postgres import PostgresBackend  # psycopg: only where the server runs

        return Store.on(PostgresBackend.connect(self.url))


Pair = tuple[PgRelay, PgRelay]


def pg_relay(tmp_path: Path, name: str, surface: ObservingSurface, url: str, state: Path) -> PgRelay:
    """Relay ``name`` on the database at ``url`` (1 s leases), its files in a folder of its own."""
    (tmp_path / name).mkdir()
    return PgRelay(tmp_path / name, surface, state_dir=state, url=url,
                   overrides={"store": {"lease_s": 1.0, "relay_name": f"relay-{name}"}})


@pytest.fixture
async def pair(tmp_path: Path, postgres: PostgresServer) -> AsyncIterator[Pair]:
    url = postgres.schema_url("own")
    surface = make_surface()
    relays = [pg_relay(tmp_path, name, surface, url, tmp_path / "agent-state") for name in ("a", "b")]
    try:
        for r in relays:
            await r.start()
        yield relays[0], relays[1]
    finally:
        for r in relays:
            await r.close()


def script(n: int, sleep_s: float = 0.0) -> str:
    return f"text answer-{n} begins\n" + (f"sleep {sleep_s}\n" if sleep_s else "") + f"text  answer-{n} ends"


async def restart_grace_over(r: Relay) -> None:
    """A database server started moments ago lets no lease be taken over for two lease times (1 s here)."""
    uptime = "SELECT extract(epoch FROM now() - pg_postmaster_start_time())"
    await until(lambda: float(r.store.backend.execute(uptime).rows[0][0]) > 2.5, "the restart grace is over")


def complete(r: Relay, n: int) -> int:
    """How many messages show answer ``n`` complete (its last words and the footer)."""
    return sum(f"answer-{n} ends" in m.text and FOOTER in m.text for m in r.surface.messages.values())


def answered(r: Relay, *ns: int) -> Callable[[], bool]:
    return lambda: all(complete(r, n) for n in ns)


def prompted(r: Relay) -> list[int]:
    """The answers this relay's agent was asked for, in order."""
    return [int(p.split("answer-")[1].split()[0]) for p in r.prompts() if "answer-" in p]


async def test_the_owner_answers_what_any_relay_received_in_order_and_the_other_never_does(pair: Pair) -> None:
    a, b = pair
    await a.send(script(1))
    await until(answered(a, 1), "the first answer")
    assert a.engine.ownership is not None and a.engine.ownership.holder(KEY) == "relay-a"
    for n in range(2, 8):
        await (b if n % 2 == 0 else a).send(script(n), message_id=f"m{n}")
    await until(answered(a, *range(1, 8)), "every answer")
    assert prompted(a) == list(range(1, 8))  # relay a's agent, in the order they came
    assert prompted(b) == []
    assert all(complete(a, n) == 1 for n in range(1, 8))
    assert a.engine.store.unfinished_inbound() == []


async def test_a_redelivery_to_another_relay_is_answered_once(pair: Pair) -> None:
    a, b = pair
    await a.send(script(1), message_id="same")
    await b.send(script(1), message_id="same")  # the platform delivered it again, to relay b
    await until(answered(a, 1), "the answer")
    await a.send(script(2), message_id="after")
    await until(answered(a, 2), "the next answer")
    assert complete(a, 1) == 1 and prompted(a) == [1, 2] and prompted(b) == []


async def test_an_owner_that_lost_its_lease_goes_silent_and_the_new_owner_answers_once(pair: Pair) -> None:
    a, b = pair
    await a.send(script(1))
    await until(answered(a, 1), "the first answer")
    await restart_grace_over(a)
    slow = await a.send(script(2, sleep_s=3.0), message_id="slow")
    await until(lambda: any("answer-2 begins" in m.text for m in a.surface.messages.values()), "the slow answer begins")
    # Relay a's lease runs out under it (a clock jump, a stall): relay b takes the conversation over.
    a.store.backend.execute("UPDATE leases SET expires_at = {now} - 1 WHERE name = ?", (LEASE_PREFIX + KEY,))
    nxt = await b.send(script(3), message_id="next")
    await until(answered(a, 2, 3), "the new owner's answers", timeout=30)
    assert b.engine.ownership is not None and b.engine.ownership.holder(KEY) == "relay-b"
    await until(lambda: KEY not in a.engine.conversations, "relay a let the conversation go")
    assert prompted(a) == [1, 2] and prompted(b) == [2, 3]  # b answered the interrupted message again
    assert complete(a, 2) == 1 and complete(a, 3) == 1
    sent = [text for call in a.surface.calls for text in call[2:]]  # every send and edit, overwritten or not
    assert not any(wording.INTERRUPTED_BY_RESTART in text for text in sent)  # a said nothing more
    for msg in (slow, nxt):  # each answered in reply to its message
        assert [m for m in a.surface.messages.values() if m.reply_to == msg.message_id]


async def test_a_message_left_with_no_owner_is_taken_by_a_sweep(pair: Pair) -> None:
    a, b = pair
    # Journaled by a relay that died before it could take the conversation (nobody was woken).
    a.store.record_inbound("memory", "orphan", "memory:c2", {"text": script(9), "user_id": USER})
    await until(answered(a, 9), "the orphan's answer", timeout=30)
    assert sorted([*prompted(a), *prompted(b)]) == [9] and complete(a, 9) == 1


async def test_status_names_the_relay_that_owns_the_conversation_whichever_relay_is_asked(pair: Pair) -> None:
    a, b = pair
    await a.send(script(1))
    await until(answered(a, 1), "the answer")
    assert b.engine.status(KEY).relay == "relay-a"
    asked = await b.send("/status", message_id="status")
    await until(lambda: any(m.origin == asked.message_id for m in a.surface.messages.values()), "the status")
    (shown,) = [m.text for m in a.surface.messages.values() if m.origin == asked.message_id]
    assert "Relay: relay-a" in shown


async def test_a_single_relay_names_no_relay(relay: Callable[..., Any]) -> None:
    r = await relay()
    await r.ask(script(1))
    assert r.engine.ownership is None and r.engine.status(KEY).relay is None
    shown = (await r.ask("/status")).text
    assert "Relay:" not in shown and "State: idle" in shown


async def test_one_relay_at_a_time_runs_an_exclusive_receive_loop_and_another_takes_it_over(pair: Pair) -> None:
    a, b = pair
    running: list[str] = []
    log: list[str] = []

    def loop(name: str) -> Callable[[], Awaitable[None]]:
        async def work() -> None:
            running.append(name)
            log.append(f"{name} polls")
            try:
                await asyncio.Event().wait()
            finally:
                running.remove(name)
                log.append(f"{name} stops")
        return work

    on_a = asyncio.create_task(a.lifecycle.host("memory").exclusive("poller", loop("a")))
    await until(lambda: running == ["a"], "relay a polls")
    on_b = asyncio.create_task(b.lifecycle.host("memory").exclusive("poller", loop("b")))
    tasks = {"a": on_a, "b": on_b}
    try:
        await asyncio.sleep(1.0)  # relay b stands by through several tries (every third of the 1 s lease)
        assert running == ["a"]
        # Another relay takes the lease over behind relay a's back (a stall): a stops at its next renewal.
        a.store.backend.execute("UPDATE leases SET expires_at = {now} - 1 WHERE name = 'memory:poller'")
        other = a.store.leases.acquire("memory:poller", "relay-x", 30)
        assert other is not None
        await until(lambda: running == [], "relay a stopped polling")
        assert not on_a.done() and not on_b.done()  # both stand by
        a.store.leases.release(other)
        await until(lambda: len(running) == 1, "a relay polls again")
        # The one polling stops (and lets go): the other polls.
        (holder,) = running
        tasks[holder].cancel()
        await asyncio.wait({tasks[holder]})
        survivor = "b" if holder == "a" else "a"
        await until(lambda: running == [survivor], "the other relay took over")
        assert log[-3:] == [f"{holder} polls", f"{holder} stops", f"{survivor} polls"]  # never both at once
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)


async def test_an_owner_cut_off_from_the_database_gives_up_before_its_lease_expires(
        tmp_path: Path, postgres: PostgresServer) -> None:
    # Relay a reaches the database as a role of its own, so it alone can be cut off (its connections
    # ended, new ones refused), as a network partition between it and the database would.
    role = f"relay_cut_{os.getpid()}"
    postgres.psql(f"CREATE ROLE {role} SUPERUSER LOGIN PASSWORD 'cut-pw'")
    shared = postgres.schema_url("cut")
    surface = make_surface()
    for name in "ab":
        (tmp_path / name).mkdir()
    a = PgRelay(tmp_path / "a", surface, state_dir=tmp_path / "agent-state",
                url=shared.replace("postgres:relay-test-pw@", f"{role}:cut-pw@"),
                overrides={"store": {"lease_s": 1.0, "relay_name": "relay-a"}})
    b = PgRelay(tmp_path / "b", surface, state_dir=tmp_path / "agent-state", url=shared,
                overrides={"store": {"lease_s": 1.0, "relay_name": "relay-b"}})
    try:
        await a.start()
        await b.start()
        await a.send(script(1, sleep_s=3.0), message_id="slow")
        await until(lambda: any("answer-1 begins" in m.text for m in surface.messages.values()), "the answer begins")
        postgres.psql(f"ALTER ROLE {role} NOLOGIN")
        postgres.psql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'")
        calls_before = len(surface.calls)
        await until(lambda: KEY not in a.engine.conversations, "relay a gave the conversation up")
        gave_up = len(surface.calls)
        assert b.engine.ownership is not None and b.engine.ownership.holder(KEY) == "relay-a"  # not expired yet
        await b.send(script(2), message_id="next")
        await until(answered(b, 1, 2), "relay b's answers", timeout=30)
        assert b.engine.ownership.holder(KEY) == "relay-b"
        assert complete(b, 1) == 1 and complete(b, 2) == 1
        assert prompted(b) == [1, 2]
        # Relay a said nothing after it was cut off: no error, no "interrupted" line.
        assert gave_up == calls_before or all(call[0] == "typing" for call in surface.calls[calls_before:gave_up])
        shown = [m.text for m in surface.messages.values()]
        # (a queued message's receipt says so once its turn begins)
        assert all(text.startswith(("answer-", "Queued", tw.receipt_outcome("answering"))) for text in shown), shown
    finally:
        postgres.psql(f"ALTER ROLE {role} LOGIN")
        for r in (a, b):
            await r.close()


@pytest.mark.parametrize("shared_sessions", [True, False])
async def test_the_new_owner_loads_the_session_where_it_can_reach_it_and_else_says_it_starts_anew(
        tmp_path: Path, postgres: PostgresServer, shared_sessions: bool) -> None:
    url = postgres.schema_url("moved")
    surface = make_surface()
    relays = [pg_relay(tmp_path, name, surface, url,
                       tmp_path / ("agent-state" if shared_sessions else f"agent-state-{name}")) for name in ("a", "b")]
    a, b = relays
    try:
        for r in relays:
            await r.start()
        await a.send(script(1))
        await until(answered(a, 1), "relay a's answer")
        session = a.session_id()
        await a.close()  # relay a stops (its leases released): relay b owns the conversation from its next message
        await b.send(script(2), message_id="next")
        await until(answered(b, 2), "relay b's answer")
        notices = [m.text for m in surface.messages.values() if wording.SESSION_LOST in m.text]
        if shared_sessions:
            assert b.session_id() == session and not notices
            assert "session/load" in b.methods()
        else:
            assert b.session_id() != session and len(notices) == 1
    finally:
        for r in relays:
            await r.close()


async def test_an_approval_pressed_on_another_relay_reaches_the_owner(pair: Pair) -> None:
    a, b = pair
    msg = await a.send("tool t1 execute ls\npermission t1\ntext answer-5 begins\ntext answer-5 ends")
    await until(lambda: any(m.buttons for m in a.surface.messages.values()), "the approval")
    (approval,) = [m for m in a.surface.messages.values() if m.buttons]
    (allow,) = [btn for btn in approval.buttons if btn.label == "Allow once"]
    # The platform delivered the press to relay b (another Socket Mode connection, the load balancer).
    result = await b.press(allow.token)
    assert result.outcome == "resolved", result
    await until(answered(a, 5), "the answer after the approval")
    assert "permission:selected:allow-once" in a.answer(msg)
    assert await b.press(allow.token) == PressResult("expired", wording.PRESS_EXPIRED)  # once only
    assert await a.press(allow.token) == PressResult("expired", wording.PRESS_EXPIRED)


async def test_an_edit_received_by_another_relay_is_taken_by_the_owner(pair: Pair) -> None:
    """The person edits two messages and deletes a third; the platform delivers the changes to relay b, while
    relay a answers the conversation: the waiting message is answered with its new words, the deleted one
    never, the running one gets the notice, each once, from the owner."""
    a, b = pair
    running = await a.send(script(1, 0.6))
    await until(lambda: prompted(a) == [1], "the first message at relay a's agent")
    waiting = await a.send(script(2), message_id="m2")
    unwanted = await a.send(script(4), message_id="m4")
    await until(lambda: len(a.conv().queue) == 2, "two wait their turn at relay a")
    for original, words in ((waiting, script(3)), (running, "text answer-1 harder")):
        await b.send(words, message_id=f"{original.message_id}:edit", edits=original.message_id)
    await b.send("", message_id="m4:deleted", user="", edits=unwanted.message_id, deleted=True)
    await until(answered(a, 1, 3), "both answered")
    await a.idle()
    assert prompted(a) == [1, 3] and prompted(b) == [], "read as edited, the deleted one never, by the owner"
    notices = [m for m in a.surface.messages.values() if m.text.startswith("The agent had already read")]
    assert [n.text for n in notices] == [edit_wording.edit_not_sent_text("text answer-1 harder")]
    assert notices[0].reply_to == running.message_id
    assert a.engine.store.unfinished_inbound() == []


async def test_an_answer_kept_in_the_ledger_is_resent_by_the_owner_alone(pair: Pair) -> None:
    a, b = pair
    await a.send(script(1))
    await until(answered(a, 1), "the first answer")
    for n in range(3):  # answers a chat would not take, kept for the conversation a owns
        a.store.add_outbound(KEY, {"surface": "memory", "text": f"kept answer {n}"})
    b.engine.outbox.schedule_redelivery()
    a.engine.outbox.schedule_redelivery()
    await until(lambda: not a.store.pending_outbound(), "the ledger emptied")
    await until(lambda: not a.engine.outbox.redelivering and not b.engine.outbox.redelivering, "redelivery over")
    shown = [m.text for m in a.surface.messages.values()]
    assert [sum(f"kept answer {n}" in text for text in shown) for n in range(3)] == [1, 1, 1], shown


async def test_a_dead_relays_kept_answer_is_resent_by_the_conversations_next_owner(pair: Pair) -> None:
    a, _ = pair
    # A relay that died with an answer in the ledger, for a conversation nobody owns now.
    a.store.add_outbound("memory:c3", {"surface": "memory", "text": "kept for c3"})
    await until(lambda: not a.store.pending_outbound(), "the ledger emptied", timeout=30)
    shown = [m.text for m in a.surface.messages.values()]
    assert sum("kept for c3" in text for text in shown) == 1, shown


async def test_an_owner_whose_lease_was_taken_over_cannot_write_the_outbound_ledger(pair: Pair) -> None:
    a, b = pair
    await a.send(script(1))
    await until(answered(a, 1), "the first answer")
    assert a.engine.ownership is not None and b.engine.ownership is not None
    await restart_grace_over(a)
    lease = a.engine.ownership.leases[KEY]
    # Relay b takes the conversation over (a's lease ran out under it) before a's heartbeat noticed
    # (both relays share this event loop: no heartbeat runs between these two lines).
    a.store.backend.execute("UPDATE leases SET expires_at = {now} - 1 WHERE name = ?", (LEASE_PREFIX + KEY,))
    assert b.engine.ownership.take(KEY)
    assert a.engine.ownership.leases.get(KEY) == lease  # a still believes it owns the conversation
    a.surface.down = True  # the old owner's answer does not land: the outbox would keep it
    streamer = a.engine.outbox.streamer(a.surface, KEY)
    with pytest.raises(LeaseLost):
        await a.engine.outbox.deliver(streamer, "an answer the old owner must not keep")
    assert a.store.pending_outbound() == []
    # Nor may it record as delivered a row the new owner holds.
    row = b.engine.outbox.fenced(KEY).add_outbound(KEY, {"surface": "memory", "text": "the new owner's"})
    with pytest.raises(LeaseLost):
        a.engine.outbox.fenced(KEY).ack_outbound(row)
    assert [r.id for r in a.store.pending_outbound()] == [row]


def heartbeat_stalled(r: Relay) -> None:
    """``r``'s heartbeat stops (a stalled event loop runs none): nothing renews its leases, nothing
    tells it that they ran out."""
    (beat,) = [t for t in r.engine.tasks._tasks if t.get_name() == "ownership"]
    beat.cancel()


async def test_an_owner_past_its_leases_deadline_makes_no_platform_call_and_the_new_owner_answers(
        tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.schema_url("deadline")
    shared = make_surface()
    # Each relay has a surface of its own over the same fake chat (the same messages, calls and ids),
    # so what relay a sends is told from what relay b sends.
    surface_b = copy.copy(shared)
    surface_b.observers = []
    from_a: list[str] = []
    shared.observers.append(lambda method, key, text: from_a.append(f"{method} {text}"))
    relays = [pg_relay(tmp_path, name, surface, url, tmp_path / "agent-state")
              for name, surface in (("a", shared), ("b", surface_b))]
    a, b = relays
    try:
        for r in relays:
            await r.start()
        await a.send(script(1))
        await until(answered(a, 1), "the first answer")
        await a.send(script(2, sleep_s=3.0), message_id="slow")
        await until(lambda: any("answer-2 begins" in m.text for m in shared.messages.values()), "the answer begins")
        assert a.engine.ownership is not None and b.engine.ownership is not None
        # Relay a's loop stalls past its lease's deadline: its heartbeat has not run since, so a still
        # holds the lease in memory when its turn goes on.
        heartbeat_stalled(a)
        lease = a.engine.ownership.leases[KEY]
        a.engine.ownership.leases[KEY] = dataclasses.replace(lease, deadline=time.monotonic() - 1)
        said = len(from_a)
        # Its lease expires in the database too: relay b takes the conversation over and answers.
        await until(lambda: b.engine.ownership is not None and b.engine.ownership.holder(KEY) == "relay-b",
                    "relay b took the conversation over", timeout=30)
        await until(answered(a, 2), "the new owner's answer", timeout=30)
        assert from_a[said:] == []  # relay a sent and edited nothing after its deadline
        await until(lambda: KEY not in a.engine.conversations, "relay a stopped the conversation")
        assert prompted(b) == [2] and complete(a, 2) == 1
        assert a.engine.ownership.leases.get(KEY) is None
        assert not any("answer-2 ends" in text for text in from_a)
        assert not any(wording.INTERRUPTED_BY_RESTART in text for text in from_a)
    finally:
        for r in relays:
            await r.close()


async def test_a_late_write_about_a_conversation_this_relay_let_go_is_refused(pair: Pair) -> None:
    a, b = pair
    await a.send(script(1))
    await until(answered(a, 1), "the first answer")
    own_a, own_b = a.engine.ownership, b.engine.ownership
    assert own_a is not None and own_b is not None
    await restart_grace_over(a)
    # Relay b takes the conversation over; relay a's heartbeat notices and drops the lease.
    a.store.backend.execute("UPDATE leases SET expires_at = {now} - 1 WHERE name = ?", (LEASE_PREFIX + KEY,))
    assert own_b.take(KEY)
    own_a.renew()
    assert KEY not in own_a.leases
    # A message of the conversation the new owner is to answer; relay a's late write must not touch it.
    late = a.message(script(2), message_id="late")
    assert b.engine.journal.record(late)
    with pytest.raises(LeaseLost):
        own_a.fenced(KEY).complete_inbound(late.surface, late.message_id)
    with pytest.raises(LeaseLost):
        a.engine.journal.complete(late)
    assert [r.message_id for r in a.store.unfinished_inbound(KEY)] == ["late"]
    # A conversation relay a let go by itself (evicted from memory): the same.
    assert own_a.take("memory:c9")
    own_a.release("memory:c9")
    with pytest.raises(LeaseLost):
        own_a.fenced("memory:c9").reset_conversation("memory:c9")
    # Taken again, its writes are fenced by the new lease; one never taken here is written as before.
    assert own_a.take("memory:c9")
    own_a.fenced("memory:c9").reset_conversation("memory:c9")
    assert own_a.fenced("memory:c10") is a.engine.store
    own_b.release(KEY)


async def test_a_question_pressed_after_its_relay_let_the_conversation_go_is_answered_under_a_new_lease(
        pair: Pair) -> None:
    a, b = pair
    key = "memory:c4"
    # A dead owner's turn may have run a tool: whichever relay takes the conversation asks first.
    a.store.record_inbound("memory", "dead", key, {"text": script(4), "user_id": USER})
    a.store.note_inbound_tool("memory", "dead", "rm -rf build", "execute")
    await until(lambda: any(m.buttons for m in a.surface.messages.values() if m.conversation_key == key),
                "the question", timeout=30)
    (question,) = [m for m in a.surface.messages.values() if m.conversation_key == key and m.buttons]
    (again,) = [btn for btn in question.buttons if btn.label == wording.RESEND_LABEL]
    asker = next(r for r in (a, b) if r.engine.ownership is not None and r.engine.ownership.lease(key) is not None)
    assert asker.engine.ownership is not None
    # The asking relay lets the idle conversation go (evicted from memory), as it may while the person thinks.
    asker.engine.conversations.pop(key, None)
    asker.engine.ownership.release(key)
    result = await asker.press(again.token, key=key)
    assert result.outcome == "resolved", result
    await until(answered(a, 4), "the answer sent again", timeout=30)
    assert asker.engine.ownership.holder(key) == asker.engine.ownership.relay  # taken again before it answered
    assert complete(a, 4) == 1 and sorted([*prompted(a), *prompted(b)]) == [4]


async def test_an_owner_past_its_deadline_neither_shows_nor_keeps_an_answer_and_says_nothing(pair: Pair) -> None:
    a, _ = pair
    await a.send(script(1))
    await until(answered(a, 1), "the first answer")
    ownership = a.engine.ownership
    assert ownership is not None
    heartbeat_stalled(a)
    streamer = a.engine.outbox.streamer(a.surface, KEY)  # made while the lease is held: an owner's calls
    lease = ownership.leases[KEY]
    ownership.leases[KEY] = dataclasses.replace(lease, deadline=time.monotonic() - 1)
    calls = len(a.surface.calls)
    with pytest.raises(LeaseLost):
        await a.engine.outbox.deliver(streamer, "an answer past the deadline")
    assert a.surface.calls[calls:] == [] and a.store.pending_outbound() == []  # not shown, not kept
    await until(lambda: KEY not in ownership.leases and KEY not in a.engine.conversations, "relay a let it go")
    with pytest.raises(LeaseLost):  # the streamer's later calls come after its lease was let go
        await streamer.post("one more")
    assert a.surface.calls[calls:] == []
