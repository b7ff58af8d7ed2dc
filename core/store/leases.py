"""Ownership leases with fencing tokens: one owner at a time for a conversation (or a platform's
poller) while several relays share the database.

A lease is a row: its owner, its token and its expiry, by the database's clock (``now()`` on
PostgreSQL), never a relay's. The rules:

- ``acquire`` takes a lease that is free, released or expired, and the token grows by one (a new
  tenure); the owner that already holds it, unexpired, gets it back unchanged. Held by another
  owner: None. With ``restart_grace_s``, an expired lease of another owner is not taken in the
  first ``restart_grace_s`` after the database server started: a server that was down let every
  lease run out, and their owners, which could not renew meanwhile, get the first word (they write
  what they could not while it was down, fenced by their token, before anyone takes over).
- ``renew`` (the owner's heartbeat) extends it while the token is still the owner's, even past the
  expiry if nobody took it over meanwhile; taken over: :class:`LeaseLost`. ``renew_all`` does the
  same for every lease a relay holds, in one statement (a few hundred leases per statement).
- ``release`` lets it go at once (the row stays, so the next token is still larger).
- ``claim_expired`` takes over expired leases in one statement (``FOR UPDATE SKIP LOCKED``: relays
  sweeping at the same time get different ones, none waits).
- A fenced write (``Store.fenced(lease)``) runs in a transaction that first locks the lease row
  (``FOR SHARE``) and checks the token: a write by an owner whose lease was taken over fails with
  :class:`LeaseLost`, and a takeover waits for a fenced write under way to commit, so the new owner
  reads everything the old one wrote.

``Lease.deadline`` is on the relay's monotonic clock and never later than the database's expiry:
it starts before the request is sent, less ``CLOCK_SLACK_S`` (SQLite reads its clock to the
millisecond, so the two clocks may disagree by that much). An owner that could not renew by then must stop acting for
that lease (a platform message it sends after may already be the new owner's to send).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from core.store.backend import Backend, Transaction
from core.store.records import StoreError

__all__ = ["CLOCK_SLACK_S", "Lease", "LeaseHolder", "LeaseLost", "Leases", "check_fence"]

#: How much earlier than the database's expiry an owner stops acting on a lease: the relay's clock
#: and the database's are read at different moments, SQLite's to the millisecond.
CLOCK_SLACK_S = 0.05
#: Leases renewed per statement by ``renew_all`` (3 parameters each: under SQLite's old limit of 999).
_RENEW_BATCH = 300


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease held: ``token`` fences the owner's writes; renew before ``deadline`` (``time.monotonic``)."""

    name: str
    owner: str
    token: int
    ttl_s: float
    deadline: float

    def remaining_s(self) -> float:
        """Seconds left before the owner must stop acting (negative: past the deadline)."""
        return self.deadline - time.monotonic()


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who holds a lease now, and for how long still (by the database's clock)."""

    owner: str
    token: int
    remaining_s: float


class LeaseLost(StoreError):
    """The owner's lease was taken over: it must not touch what the lease guards again."""

    code = "store.lease_lost"

    def __init__(self, path: str, lease: Lease, holder: str | None, token: int | None, *,
                 why: str = "another relay took it over, so this write was refused") -> None:
        self.lease = lease
        now = f"now held by {holder} (token {token})" if holder is not None else "it is gone"
        super().__init__(path, f"{lease.owner} no longer holds the lease on {lease.name} (its token "
                               f"{lease.token}; {now}): {why}")


class Leases:
    """The lease rules above, in portable SQL (``{now}`` is the database's clock)."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def acquire(self, name: str, owner: str, ttl_s: float, *, restart_grace_s: float = 0.0) -> Lease | None:
        """Take ``name`` for ``owner`` for ``ttl_s`` seconds if it is free, released or expired (or
        already ``owner``'s); None while another owner holds it (or, expired, in the first
        ``restart_grace_s`` after the database server started)."""
        start = time.monotonic()
        rows = self._backend.execute(
            "INSERT INTO leases (name, owner, token, expires_at) VALUES (?, ?, 1, {now} + ?)"
            " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at,"
            " token = CASE WHEN leases.owner = excluded.owner AND leases.expires_at > {now}"
            " THEN leases.token ELSE leases.token + 1 END"
            " WHERE (leases.expires_at <= {now} AND {started} <= {now} - ?) OR leases.owner = excluded.owner"
            " RETURNING token",
            (name, owner, ttl_s, restart_grace_s)).rows
        return Lease(name, owner, int(rows[0][0]), ttl_s, start + ttl_s - CLOCK_SLACK_S) if rows else None

    def renew(self, lease: Lease) -> Lease:
        """Extend ``lease`` by its ``ttl_s`` from now; :class:`LeaseLost` if it was taken over."""
        start = time.monotonic()
        result = self._backend.execute("UPDATE leases SET expires_at = {now} + ? WHERE name = ? AND owner = ?"
                                       " AND token = ?", (lease.ttl_s, lease.name, lease.owner, lease.token))
        if result.rowcount != 1:
            raise self._lost(lease)
        return replace(lease, deadline=start + lease.ttl_s - CLOCK_SLACK_S)

    def renew_all(self, leases: Sequence[Lease]) -> tuple[list[Lease], list[Lease]]:
        """Extend each of ``leases`` by its ``ttl_s`` from now, in one statement per ``ttl_s`` (and per
        few hundred leases): ``(renewed, taken over)``, the renewed with their new deadline."""
        renewed: list[Lease] = []
        by_ttl: dict[float, list[Lease]] = {}
        for lease in leases:
            by_ttl.setdefault(lease.ttl_s, []).append(lease)
        for ttl_s, same in by_ttl.items():
            for at in range(0, len(same), _RENEW_BATCH):
                batch = same[at:at + _RENEW_BATCH]
                start = time.monotonic()
                rows = self._backend.execute(
                    "UPDATE leases SET expires_at = {now} + ? WHERE (name, owner, token) IN (VALUES "
                    + ", ".join(["(?, ?, ?)"] * len(batch)) + ") RETURNING name",
                    (ttl_s, *(value for lease in batch for value in (lease.name, lease.owner, lease.token)))).rows
                kept = {str(name) for (name,) in rows}
                renewed += [replace(lease, deadline=start + ttl_s - CLOCK_SLACK_S) for lease in batch
                            if lease.name in kept]
        done = {lease.name for lease in renewed}
        return renewed, [lease for lease in leases if lease.name not in done]

    def release(self, lease: Lease) -> bool:
        """Let ``lease`` go now; False if it was no longer the owner's (nothing changes then)."""
        result = self._backend.execute("UPDATE leases SET expires_at = {now} WHERE name = ? AND owner = ?"
                                       " AND token = ?", (lease.name, lease.owner, lease.token))
        return result.rowcount == 1

    def holder(self, name: str) -> LeaseHolder | None:
        """Who holds ``name`` now; None when nobody does (never taken, released or expired)."""
        rows = self._backend.execute("SELECT owner, token, expires_at - {now} FROM leases WHERE name = ?"
                                     " AND expires_at > {now}", (name,)).rows
        return LeaseHolder(str(rows[0][0]), int(rows[0][1]), float(rows[0][2])) if rows else None

    def claim_expired(self, owner: str, ttl_s: float, prefix: str = "", limit: int = 100) -> list[Lease]:
        """Take over up to ``limit`` expired or released leases whose name starts with ``prefix``
        (a dead relay's conversations), oldest expiry first; the ones other relays are claiming at
        the same moment are skipped, not waited for."""
        start = time.monotonic()
        rows = self._backend.execute(
            "UPDATE leases SET owner = ?, token = token + 1, expires_at = {now} + ? WHERE name IN"
            " (SELECT name FROM leases WHERE expires_at <= {now} AND substr(name, 1, ?) = ?"
            " ORDER BY expires_at LIMIT ?{skip_locked}) RETURNING name, token",
            (owner, ttl_s, len(prefix), prefix, limit)).rows
        return sorted((Lease(str(name), owner, int(token), ttl_s, start + ttl_s) for name, token in rows),
                      key=lambda lease: lease.name)

    def _lost(self, lease: Lease) -> LeaseLost:
        rows = self._backend.execute("SELECT owner, token FROM leases WHERE name = ?", (lease.name,)).rows
        holder, token = (str(rows[0][0]), int(rows[0][1])) if rows else (None, None)
        return LeaseLost(self._backend.location, lease, holder, token)


def check_fence(backend: Backend, tx: Transaction, lease: Lease) -> None:
    """In ``tx``: lock ``lease``'s row until the commit and check it is still the owner's (once per
    transaction); :class:`LeaseLost` if not."""
    key = (lease.name, lease.owner, lease.token)
    if key in tx.fences:
        return
    rows = backend.execute("SELECT owner, token FROM leases WHERE name = ?{for_share}", (lease.name,)).rows
    if not rows or (str(rows[0][0]), int(rows[0][1])) != (lease.owner, lease.token):
        holder, token = (str(rows[0][0]), int(rows[0][1])) if rows else (None, None)
        raise LeaseLost(backend.location, lease, holder, token)
    tx.fences.add(key)
