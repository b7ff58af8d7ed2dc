"""Messages submitted at once are journaled together: one transaction for all those a surface hands over
in one round of the event loop (issue 24: a burst of conversations paid a commit each, about 75 us,
before any of them was handled). Each is still journaled before its ``submit`` returns, answered in
arrival order per conversation, and a redelivery is still told apart. Counted as the statements SQLite
runs, never timed."""

from __future__ import annotations

import asyncio

from core.store import StoreError
from tests.engine.conftest import RelayFactory
from tests.engine.test_store_statements import statement_kind, traced
from tests.waiting import until


async def test_messages_submitted_at_once_are_journaled_in_one_transaction(relay: RelayFactory) -> None:
    r = await relay()
    host = r.lifecycle.host(r.surface.name)
    first, second = r.message("first", key="memory:a"), r.message("second", key="memory:a")
    others = [r.message(f"hello {i}", key=f"memory:k{i}") for i in range(4)]
    with traced(r.store) as statements:
        await asyncio.gather(*(host.submit(m) for m in (first, second, *others, first)))  # first: redelivered
        kinds = [k for k in map(statement_kind, statements) if k in ("BEGIN", "COMMIT", "INSERT inbound")]
        journaled = r.store.unfinished_inbound()
    assert kinds[:kinds.index("COMMIT") + 1] == ["BEGIN", *["INSERT inbound"] * 7, "COMMIT"], kinds
    assert [j.message_id for j in journaled][:6] == [m.message_id for m in (first, second, *others)], \
        "each is journaled when its submit returns"
    await until(lambda: all(r.replies_to(m) for m in (first, second, *others)), what="every message answered")
    for key in ("memory:a", *(m.conversation_key for m in others)):
        await r.idle(key)
    assert int(r.reply_to(first).message_id) < int(r.reply_to(second).message_id), "in arrival order"
    assert all(r.replies_to(m) for m in others)
    assert len(r.replies_to(first)) == 1, "the redelivery is not answered again"


async def test_a_batch_the_store_cannot_journal_fails_each_submit_and_hands_none_over(relay: RelayFactory) -> None:
    r = await relay()
    host = r.lifecycle.host(r.surface.name)
    conn = r.store.backend._conn  # type: ignore[attr-defined]  # a disk that fails the journal's writes
    conn.execute("CREATE TEMP TRIGGER fail BEFORE INSERT ON inbound BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    messages = [r.message(f"hello {i}", key=f"memory:k{i}") for i in range(3)]
    failed = await asyncio.gather(*(host.submit(m) for m in messages), return_exceptions=True)
    assert all(isinstance(each, StoreError) for each in failed), failed
    conn.execute("DROP TRIGGER fail")
    assert r.store.unfinished_inbound() == [] and not r.lifecycle.hosting.busy
    await host.submit(messages[0])  # the platform sends it again: taken now
    await until(lambda: r.replies_to(messages[0]), what="the message sent again answered")
    await r.idle("memory:k0")
    assert not r.messages("memory:k1")


async def test_a_message_handled_after_others_were_submitted_waits_behind_them(relay: RelayFactory) -> None:
    r = await relay()
    host = r.lifecycle.host(r.surface.name)
    submitted, handled = r.message("submitted first"), r.message("handled second")
    waiting = asyncio.ensure_future(host.submit(submitted))
    await asyncio.sleep(0)  # submitted, not journaled yet
    await host.handle(handled)
    await waiting
    await until(lambda: r.replies_to(submitted) and r.replies_to(handled), what="both answered")
    await r.idle()
    assert int(r.reply_to(submitted).message_id) < int(r.reply_to(handled).message_id)


async def test_a_message_submitted_on_its_own_is_one_statement(relay: RelayFactory) -> None:
    r = await relay()
    host = r.lifecycle.host(r.surface.name)
    with traced(r.store) as statements:
        await host.submit(r.message("alone"))
        kinds = [k for k in map(statement_kind, statements) if k in ("BEGIN", "COMMIT", "INSERT inbound")]
    assert kinds == ["INSERT inbound"], "no transaction around a batch of one"
