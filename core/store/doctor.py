"""``acp-relay doctor``'s look at the store: reachable and writable, its schema version, and (for a
database server) how far the relay's clock is from the server's.

Leases are timed by the database's clock alone, so a skewed relay still never takes a lease too
early; but the journal's and the surfaces' timestamps come from each relay's clock, and several
relays' logs are read side by side: past :data:`MAX_SKEW_S` the clocks need fixing (NTP).
"""

from __future__ import annotations

from core.store.opening import StoreSettings, open_store
from core.store.records import StoreError

__all__ = ["MAX_SKEW_S", "check_store"]

#: The clock skew against the database server doctor accepts, in seconds.
MAX_SKEW_S = 2.0


def check_store(settings: StoreSettings) -> list[tuple[bool, str]]:
    """``(ok, line)`` for doctor: the store opened (created or migrated), written to, its version and,
    on PostgreSQL, the clock skew."""
    try:
        with open_store(settings) as store:
            store.set_offset("doctor", "probe", "ok")
            version = store.schema_version()
            if store.backend.kind == "sqlite":
                return [(True, f"{store.path} writable (SQLite, schema version {version})")]
            clock = store.clock()
    except StoreError as exc:
        return [(False, str(exc))]
    skew = (f"clock skew {clock.skew_s:+.3f} s against the database server (round trip "
            f"{clock.round_trip_s * 1000:.1f} ms)")
    if abs(clock.skew_s) > MAX_SKEW_S:
        skew += (f": more than {MAX_SKEW_S:g} s; set this machine's clock right (NTP): the relays' timestamps "
                 "should agree")
    return [(True, f"{store.path} reachable and writable (PostgreSQL, schema version {version})"),
            (abs(clock.skew_s) <= MAX_SKEW_S, skew)]
