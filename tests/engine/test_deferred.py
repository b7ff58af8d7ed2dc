"""An owner's writes kept while the database does not answer (``core.engine.deferred``), on a real
PostgreSQL: the relay's connection is cut by the server (``pg_terminate_backend``), so its next
statement fails as a lost connection does, and the one after connects again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.engine.deferred import DeferredWrites
from core.store import LeaseLost, Store
from tests.postgres import PostgresServer

KEY = "telegram:1"


@pytest.fixture
def stores(postgres: PostgresServer) -> Iterator[tuple[Store, Store, PostgresServer]]:
    from core.store.postgres import PostgresBackend

    url = postgres.schema_url("deferred")
    with Store.on(PostgresBackend.connect(url)) as a, Store.on(PostgresBackend.connect(url)) as b:
        yield a, b, postgres


def cut(server: PostgresServer, store: Store) -> None:
    """The server ends ``store``'s connection (as a restart would)."""
    pid = store.backend.execute("SELECT pg_backend_pid()").rows[0][0]
    server.psql(f"SELECT pg_terminate_backend({int(pid)})")


def owning(store: Store, messages: int) -> Store:
    """Relay a owns ``KEY``, with ``messages`` journaled in it (m1, m2...): its fenced store."""
    lease = store.leases.acquire("conversation:" + KEY, "relay-a", 30)
    assert lease is not None
    for n in range(1, messages + 1):
        store.record_inbound("telegram", f"m{n}", KEY, {"text": f"message {n}"})
    return store.fenced(lease)


def test_writes_that_meet_a_lost_connection_are_kept_in_order_and_written_when_it_answers(
        stores: tuple[Store, Store, PostgresServer]) -> None:
    a, _, server = stores
    owner = owning(a, 2)
    deferred = DeferredWrites()
    cut(server, a)
    deferred.write(KEY, lambda: owner.complete_inbound("telegram", "m1"))  # the connection was lost: kept
    assert deferred.pending(KEY)
    deferred.write(KEY, lambda: owner.complete_inbound("telegram", "m2"))  # behind it, even if it could go now
    assert [r.message_id for r in a.unfinished_inbound()] == ["m1", "m2"]
    assert deferred.flush()
    assert not deferred.pending(KEY) and a.unfinished_inbound() == []


def test_kept_writes_of_a_conversation_taken_over_meanwhile_are_dropped(
        stores: tuple[Store, Store, PostgresServer]) -> None:
    a, b, server = stores
    owner = owning(a, 1)
    deferred = DeferredWrites()
    cut(server, a)
    deferred.write(KEY, lambda: owner.complete_inbound("telegram", "m1"))
    assert deferred.pending(KEY)
    b.backend.execute("UPDATE leases SET expires_at = {now} - 1")
    assert b.leases.acquire("conversation:" + KEY, "relay-b", 30) is not None  # relay b took it over
    assert deferred.flush()  # the database answered: nothing waits any more ...
    assert not deferred.pending(KEY)
    assert [r.message_id for r in a.unfinished_inbound()] == ["m1"]  # ... and the new owner answers m1
    with pytest.raises(LeaseLost):  # (a write not kept is refused as before)
        deferred.write(KEY, lambda: owner.complete_inbound("telegram", "m1"))
