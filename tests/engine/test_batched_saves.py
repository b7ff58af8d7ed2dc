"""New sessions started in the same round of the event loop are kept in the store in one transaction
(issue 24: each new conversation of a burst paid a commit of its own, about 55 us, before its prompt
was sent). Each is still in the store before its prompt goes out. So are the records of the answers'
first messages, shown together in a burst: each is in the store before its streamer goes on, and a
stop cannot lose one. Counted as the statements SQLite runs, never timed."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from core.engine.batched import Batched
from core.engine.journal import Journal
from core.engine.messages import InboundMessage
from core.engine.streamed import Posted
from core.store import ConversationRecord, Store, StoreError
from tests.engine.conftest import RelayFactory
from tests.engine.test_store_statements import statement_kind, traced


def _record(n: int) -> ConversationRecord:
    return ConversationRecord(f"memory:k{n}", agent="fake", cwd="/w", session_id=f"s{n}")


async def test_writes_made_in_one_round_commit_together_and_each_gets_its_result(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "relay.db")
    batched = Batched(store)
    with traced(store) as statements:
        saved = await asyncio.gather(*(batched.write(lambda n=n: store.save_conversation(_record(n)))
                                       for n in range(3)))
        kinds = [statement_kind(s) for s in statements]
    assert kinds == ["BEGIN", *["INSERT conversations"] * 3, "COMMIT"], kinds
    assert saved == [True, True, True]
    assert [store.get_conversation(f"memory:k{n}").session_id for n in range(3)] == ["s0", "s1", "s2"]  # type: ignore[union-attr]
    with traced(store) as statements:
        await batched.write(lambda: store.save_conversation(_record(9)))
    assert [statement_kind(s) for s in statements] == ["INSERT conversations"], "a write on its own: no transaction"
    store.close()


async def test_a_round_the_store_cannot_keep_fails_each_writer_and_keeps_none(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "relay.db")
    conn = store.backend._conn  # type: ignore[attr-defined]  # a disk that fails the third write
    conn.execute("CREATE TEMP TRIGGER fail BEFORE INSERT ON conversations WHEN NEW.key = 'memory:k2'"
                 " BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    batched = Batched(store)
    failed = await asyncio.gather(*(batched.write(lambda n=n: store.save_conversation(_record(n))) for n in range(3)),
                                  return_exceptions=True)
    assert all(isinstance(each, StoreError) for each in failed), failed
    assert store.get_conversation("memory:k0") is None, "rolled back with the rest"
    store.close()


async def test_new_conversations_starting_at_once_keep_their_sessions_in_one_transaction(relay: RelayFactory) -> None:
    r, count = await relay(), 4
    keys = [f"memory:n{i}" for i in range(count)]
    bindings = [r.engine.conversation(key, r.surface).binding for key in keys]
    runtime = await bindings[0].runtime()
    assert all([await binding.runtime() is runtime for binding in bindings])  # each asks for its session at once
    with traced(r.store) as statements:
        starting = asyncio.ensure_future(asyncio.gather(*(binding.ensure([]) for binding in bindings)))
        for _ in range(100):  # until every session/new is out (none answered: the loop has not read yet)
            if len(runtime.conn._pending) == count:
                break
            await asyncio.sleep(0)
        assert len(runtime.conn._pending) == count
        time.sleep(0.5)  # the loop held still: the agent's answers wait in the pipe and are read together
        sessions = await starting
        kinds = [k for k in map(statement_kind, statements) if k in ("BEGIN", "COMMIT", "INSERT conversations")]
    assert kinds == ["BEGIN", *["INSERT conversations"] * count, "COMMIT"], kinds
    for key, session in zip(keys, sessions, strict=True):
        assert session.runtime is runtime
        assert r.store.get_conversation(key).session_id == session.session_id  # type: ignore[union-attr]


def _journaled(store: Store, count: int) -> tuple[Journal, list[InboundMessage]]:
    journal = Journal(store, batched=Batched(store))
    messages = [InboundMessage("memory", f"memory:k{n}", "u1", "hello", f"m{n}") for n in range(count)]
    for message in messages:
        assert journal.record(message)
    return journal, messages


async def test_answers_shown_in_one_round_record_their_first_messages_in_one_transaction(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "relay.db")
    journal, messages = _journaled(store, 3)
    logs = [journal.reply_log(message) for message in messages]
    with traced(store) as statements:
        await asyncio.gather(*(log.posted(Posted(0, 0, f"p{n}")) for n, log in enumerate(logs)))
        kinds = [statement_kind(s) for s in statements]
    assert kinds == ["BEGIN", *["INSERT reply_messages", "UPDATE inbound"] * 3, "COMMIT"], kinds
    assert [[p.message_id for p in journal.reply_messages(m)] for m in messages] == [["p0"], ["p1"], ["p2"]]
    assert all(u.reply_started for u in journal.unfinished()), "each reply marked started with its first message"
    with traced(store) as statements:  # the next piece of one answer, on its own: one statement
        await logs[0].posted(Posted(0, 1, "p0b"))
    assert [statement_kind(s) for s in statements] == ["INSERT reply_messages"]
    store.close()


async def test_a_message_shown_just_before_a_stop_is_still_recorded(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "relay.db")
    journal, [message] = _journaled(store, 1)
    noting = asyncio.create_task(journal.reply_log(message).posted(Posted(0, 0, "p0")))
    await asyncio.sleep(0)  # handed over, its round not written yet
    noting.cancel()  # the turn is stopped: the message is on the platform all the same
    with pytest.raises(asyncio.CancelledError):
        await noting
    await asyncio.sleep(0)  # the round ends
    assert [p.message_id for p in journal.reply_messages(message)] == ["p0"]
    store.close()


async def test_a_record_that_fails_after_its_writer_was_stopped_is_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = Store.open(tmp_path / "relay.db")
    journal, [message] = _journaled(store, 1)
    store.backend._conn.execute(  # type: ignore[attr-defined]  # a disk that fails the record
        "CREATE TEMP TRIGGER fail BEFORE INSERT ON reply_messages BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    noting = asyncio.create_task(journal.reply_log(message).posted(Posted(0, 0, "p0")))
    await asyncio.sleep(0)
    noting.cancel()
    with caplog.at_level(logging.WARNING, logger="acp_relay.engine.batched"), pytest.raises(asyncio.CancelledError):
        await noting
    for _ in range(3):
        await asyncio.sleep(0)
    said = [r for r in caplog.records if r.name == "acp_relay.engine.batched"]
    assert len(said) == 1 and "disk trouble" in said[0].getMessage(), caplog.records
    assert journal.reply_messages(message) == []
    store.close()


async def test_a_record_the_store_refuses_fails_the_writer_that_waits_for_it(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "relay.db")
    journal, [message] = _journaled(store, 1)
    store.backend._conn.execute(  # type: ignore[attr-defined]
        "CREATE TEMP TRIGGER fail BEFORE INSERT ON reply_messages BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    with pytest.raises(StoreError, match="disk trouble"):
        await journal.reply_log(message).posted(Posted(0, 0, "p0"))
    store.close()
