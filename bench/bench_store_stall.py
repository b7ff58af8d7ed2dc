"""What a stalled database costs the relay's event loop: store calls are synchronous and made on the
loop, so while one waits for PostgreSQL nothing else in the relay runs (no platform acknowledgement,
no streaming, no heartbeat). Measured on a throwaway server (``tests/postgres.py``): the longest the
loop went without running a 10 ms ticker while the heartbeat's one statement (``renew_all``) ran

* against a healthy server (the round trip);
* while another connection holds a lease row locked (the statement waits for ``lock_timeout``);
* while the server process serving the relay is stopped (SIGSTOP: a frozen VM, a server swapping)
  for ``FREEZE_S``: the kernel still acknowledges what the relay sends, so neither
  ``tcp_user_timeout`` nor the server's own ``statement_timeout`` ends the wait.

Run: ``python -m bench.bench_store_stall`` (needs Debian's postgresql). Figures, not assertions.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import psycopg

from core.store import Store, StoreError
from core.store.postgres import PostgresBackend
from tests.postgres import PostgresServer

FREEZE_S = float(os.environ.get("ACP_RELAY_BENCH_FREEZE_S", "8"))
LEASES = 50


async def loop_gap(call: object) -> tuple[float, float, str]:
    """(longest gap between ticks in ms, how long the call took in ms, its outcome) while ``call`` runs
    on the loop, as the relay's heartbeat does."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.1)
    start = time.perf_counter()
    outcome = "ok"
    try:
        call()  # type: ignore[operator]
    except StoreError as exc:
        outcome = f"StoreError ({exc.detail[:60]})"
    took = time.perf_counter() - start
    await asyncio.sleep(0.1)
    stop.set()
    await task
    return max(gaps) * 1000, took * 1000, outcome


async def main() -> None:
    server = PostgresServer.start()
    try:
        url = server.url()
        store = Store.on(PostgresBackend.connect(url))
        leases = [lease for i in range(LEASES)
                  if (lease := store.leases.acquire(f"conversation:{i}", "relay-a", 60)) is not None]

        gap, took, outcome = await loop_gap(lambda: store.leases.renew_all(leases))
        print(f"healthy server:             loop blocked {gap:8.1f} ms, renew_all took {took:8.1f} ms ({outcome})")

        with psycopg.connect(url) as other:  # another connection holds one lease row
            other.execute("BEGIN")
            other.execute("SELECT 1 FROM leases WHERE name = 'conversation:0' FOR UPDATE")
            gap, took, outcome = await loop_gap(lambda: store.leases.renew_all(leases))
            other.execute("ROLLBACK")
        print(f"a lease row locked:         loop blocked {gap:8.1f} ms, renew_all took {took:8.1f} ms ({outcome})")

        pid = int(store.backend.execute("SELECT pg_backend_pid()").rows[0][0])
        os.kill(pid, signal.SIGSTOP)
        thaw = threading.Timer(FREEZE_S, os.kill, (pid, signal.SIGCONT))
        thaw.start()
        try:
            gap, took, outcome = await loop_gap(lambda: store.leases.renew_all(leases))
        finally:
            thaw.join()
        print(f"server frozen {FREEZE_S:.0f} s:         loop blocked {gap:8.1f} ms, renew_all took {took:8.1f} ms "
              f"({outcome})")
        store.close()
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
