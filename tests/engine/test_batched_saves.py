"""New sessions started in the same round of the event loop are kept in the store in one transaction
(issue 24: each new conversation of a burst paid a commit of its own, about 55 us, before its prompt
was sent). Each is still in the store before its prompt goes out. Counted as the statements SQLite
runs, never timed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from core.engine.batched import Batched
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
