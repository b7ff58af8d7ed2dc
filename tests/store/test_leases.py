"""Leases and fenced writes on both backends: two relays are two stores opened on the same database
(on SQLite, the same file), each with its own connection."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from core.store import Lease, LeaseLost, Store, StoreError
from tests.store.conftest import Place

NAME = "conversation:telegram:1"


@pytest.fixture
def relays(place: Place) -> Iterator[tuple[Store, Store]]:
    with place.open() as a, place.open() as b:
        yield a, b


def expire(store: Store, name: str) -> None:
    """Let ``name``'s lease run out now (as if its time had passed), by the database's clock."""
    store.backend.execute("UPDATE leases SET expires_at = {now} - 1 WHERE name = ?", (name,))


def test_a_free_lease_is_taken_held_against_others_and_given_back_to_its_owner(relays: tuple[Store, Store]) -> None:
    a, b = relays
    lease = a.leases.acquire(NAME, "relay-a", 30)
    assert lease is not None and (lease.name, lease.owner, lease.token) == (NAME, "relay-a", 1)
    assert b.leases.acquire(NAME, "relay-b", 30) is None
    again = a.leases.acquire(NAME, "relay-a", 30)  # the owner asking again: the same tenure
    assert again is not None and again.token == 1
    holder = b.leases.holder(NAME)
    assert holder is not None and (holder.owner, holder.token) == ("relay-a", 1)
    assert 25 < holder.remaining_s <= 30
    assert b.leases.holder("conversation:other") is None


def test_the_owners_deadline_comes_before_the_databases_expiry(relays: tuple[Store, Store]) -> None:
    a, _ = relays
    lease = a.leases.acquire(NAME, "relay-a", 30)
    assert lease is not None
    holder = a.leases.holder(NAME)
    assert holder is not None
    assert lease.remaining_s() <= holder.remaining_s  # stop acting before anyone may take over


def test_an_expired_lease_is_taken_over_with_a_larger_token_and_the_old_owner_is_fenced_off(
        relays: tuple[Store, Store]) -> None:
    a, b = relays
    old = a.leases.acquire(NAME, "relay-a", 30)
    assert old is not None
    expire(a, NAME)
    new = b.leases.acquire(NAME, "relay-b", 30)
    assert new is not None and new.token == old.token + 1
    with pytest.raises(LeaseLost) as lost:
        a.leases.renew(old)
    assert "relay-a no longer holds the lease on conversation:telegram:1" in str(lost.value)
    assert "now held by relay-b (token 2)" in str(lost.value)
    with pytest.raises(LeaseLost):
        a.fenced(old).record_inbound("telegram", "7", "telegram:1", {"text": "old owner"})
    with pytest.raises(LeaseLost), a.fenced(old).transaction():
        a.set_offset("telegram", "update_id", "99")
    assert isinstance(lost.value, StoreError) and not lost.value.transient
    assert b.unfinished_inbound() == [] and b.get_offset("telegram", "update_id") is None  # nothing landed
    assert b.fenced(new).record_inbound("telegram", "7", "telegram:1", {"text": "new owner"})
    assert [r.payload for r in a.unfinished_inbound()] == [{"text": "new owner"}]


def test_renewal_extends_a_lease_nobody_took_over_even_after_its_expiry(relays: tuple[Store, Store]) -> None:
    a, b = relays
    lease = a.leases.acquire(NAME, "relay-a", 30)
    assert lease is not None
    expire(a, NAME)
    renewed = a.leases.renew(lease)
    assert renewed.token == lease.token and renewed.deadline >= lease.deadline
    assert b.leases.acquire(NAME, "relay-b", 30) is None  # renewed: held again
    assert a.fenced(renewed).reset_conversation("telegram:1") == 1


def test_a_released_lease_is_free_at_once_and_its_token_still_grows(relays: tuple[Store, Store]) -> None:
    a, b = relays
    first = a.leases.acquire(NAME, "relay-a", 30)
    assert first is not None
    assert not b.leases.release(Lease(NAME, "relay-b", first.token, 30, 0))  # not b's to release
    assert a.leases.release(first)
    assert a.leases.holder(NAME) is None
    second = b.leases.acquire(NAME, "relay-b", 30)
    assert second is not None and second.token == first.token + 1
    assert not a.leases.release(first)  # released already, and taken since
    third = a.leases.acquire(NAME, "relay-a", 30)
    assert third is None
    b.leases.release(second)
    fourth = a.leases.acquire(NAME, "relay-a", 30)  # the same owner again, after a release: a new tenure
    assert fourth is not None and fourth.token == second.token + 1


def test_expired_leases_are_claimed_by_prefix_and_live_ones_are_left(relays: tuple[Store, Store]) -> None:
    a, b = relays
    for key in ("conversation:1", "conversation:2", "conversation:3", "poller:telegram"):
        a.leases.acquire(key, "relay-a", 30)
    for key in ("conversation:1", "conversation:3", "poller:telegram"):
        expire(a, key)
    claimed = b.leases.claim_expired("relay-b", 30, prefix="conversation:")
    assert [(lease.name, lease.owner, lease.token) for lease in claimed] == [
        ("conversation:1", "relay-b", 2), ("conversation:3", "relay-b", 2)]
    assert b.leases.claim_expired("relay-b", 30, prefix="conversation:") == []
    holder = a.leases.holder("conversation:2")
    assert holder is not None and holder.owner == "relay-a"
    assert a.leases.holder("poller:telegram") is None  # expired, another prefix: not claimed


def test_relays_sweeping_at_once_claim_each_expired_lease_exactly_once(place: Place) -> None:
    names = [f"conversation:{i:03}" for i in range(60)]
    with place.open() as first:
        for name in names:
            first.leases.acquire(name, "dead-relay", 30)
            expire(first, name)
    claims: dict[str, list[str]] = {}
    failures: list[BaseException] = []

    def sweep(owner: str) -> None:
        try:
            with place.open() as store:
                got: list[str] = []
                while batch := store.leases.claim_expired(owner, 30, prefix="conversation:", limit=7):
                    got += [lease.name for lease in batch]
                claims[owner] = got
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=sweep, args=(f"relay-{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    everything = [name for got in claims.values() for name in got]
    assert sorted(everything) == names  # each one once: none twice, none left


def test_a_takeover_waits_for_the_old_owners_fenced_write_and_then_sees_it(relays: tuple[Store, Store]) -> None:
    a, b = relays
    old = a.leases.acquire(NAME, "relay-a", 30)
    assert old is not None
    expire(a, NAME)  # nobody took it yet: a's token is still the current one
    events: list[str] = []
    taken = threading.Event()

    def take_over() -> None:
        lease = b.leases.acquire(NAME, "relay-b", 30)
        events.append(f"taken {lease.token if lease else None}")
        events.append(f"sees {[r.message_id for r in b.unfinished_inbound()]}")
        taken.set()

    fenced = a.fenced(old)
    with fenced.transaction():
        fenced.record_inbound("telegram", "8", "telegram:1", {})
        thread = threading.Thread(target=take_over)
        thread.start()
        assert not taken.wait(0.5)  # blocked by the fenced write's lock until it commits
        events.append("committed")
    thread.join(30)
    assert events == ["committed", "taken 2", "sees ['8']"]
    with pytest.raises(LeaseLost):
        fenced.complete_inbound("telegram", "8")


class WriteCounter:
    """Counts the statements that write to the database between ``start`` and ``count``: on SQLite
    the connection's own trace of what it runs, on PostgreSQL the transaction ids handed out meanwhile
    (every autocommit statement that changes a row takes one; the look itself takes one too)."""

    def __init__(self, place: Place, store: Store) -> None:
        self.place, self.store = place, store
        self.traced: list[str] = []
        self.first = 0

    def _xid(self) -> int:
        return int(str(self.place.sql("SELECT pg_current_xact_id()")[0][0]))

    def start(self) -> None:
        if self.place.kind == "sqlite":
            # the sqlite3 connection's trace hook: the statements as SQLite runs them
            self.store.backend._conn.set_trace_callback(self.traced.append)  # type: ignore[attr-defined]
        else:
            self.first = self._xid()

    def count(self) -> int:
        if self.place.kind == "sqlite":
            self.store.backend._conn.set_trace_callback(None)  # type: ignore[attr-defined]
            return sum(s.lstrip().upper().startswith("UPDATE LEASES") for s in self.traced)
        return self._xid() - self.first - 1


def test_a_heartbeat_renews_every_lease_it_holds_in_one_statement(place: Place, relays: tuple[Store, Store]) -> None:
    from core.engine.ownership import LEASE_PREFIX, Ownership

    a, b = relays
    lost: list[str] = []
    ownership = Ownership(a, "relay-a", 30, pickup=lambda key: None, on_lost=lost.append, serves=lambda key: True)
    keys = [f"telegram:{i}" for i in range(6)]
    for key in keys:
        assert ownership.take(key)
    before = {key: ownership.leases[key] for key in keys}
    expire(a, LEASE_PREFIX + keys[2])  # one was taken over by another relay meanwhile
    assert b.leases.acquire(LEASE_PREFIX + keys[2], "relay-b", 30) is not None
    counter = WriteCounter(place, a)
    counter.start()
    ownership.renew()
    assert counter.count() == 1
    assert lost == [keys[2]] and sorted(ownership.leases) == sorted(k for k in keys if k != keys[2])
    for key, lease in ownership.leases.items():  # the same tenure, a later deadline
        assert lease.token == before[key].token and lease.deadline >= before[key].deadline
        holder = a.leases.holder(lease.name)
        assert holder is not None and holder.owner == "relay-a" and holder.remaining_s > 25


def test_renewing_many_leases_at_once_reports_the_ones_taken_over(relays: tuple[Store, Store]) -> None:
    a, b = relays
    leases = [a.leases.acquire(f"conversation:{i}", "relay-a", 30) for i in range(700)]  # several statements' worth
    assert all(lease is not None for lease in leases)
    held = [lease for lease in leases if lease is not None]
    expire(a, held[400].name)
    assert b.leases.acquire(held[400].name, "relay-b", 30) is not None
    renewed, taken = a.leases.renew_all(held)
    assert [lease.name for lease in taken] == [held[400].name]
    assert sorted(lease.name for lease in renewed) == sorted(lease.name for lease in held if lease is not held[400])
    assert a.leases.renew_all([]) == ([], [])


def test_after_the_database_server_starts_an_expired_lease_waits_for_its_owner_a_while(
        place: Place, relays: tuple[Store, Store]) -> None:
    a, b = relays
    old = a.leases.acquire(NAME, "relay-a", 30)
    assert old is not None
    expire(a, NAME)  # (as if the server had been down longer than the lease)
    if place.kind == "postgresql":
        uptime = float(str(place.sql("SELECT EXTRACT(EPOCH FROM now() - pg_postmaster_start_time())")[0][0]))
        assert b.leases.acquire(NAME, "relay-b", 30, restart_grace_s=uptime + 60) is None
        assert a.leases.renew(old).token == old.token  # its owner gets the first word
        expire(a, NAME)
    new = b.leases.acquire(NAME, "relay-b", 30, restart_grace_s=0.5)  # (SQLite: no server, no restart)
    assert new is not None and new.token == old.token + 1
