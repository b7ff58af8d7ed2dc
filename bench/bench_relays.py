"""One relay on SQLite against three relays on one PostgreSQL, on the same machine.

Each relay is the core as in production (a ``core.lifecycle.Lifecycle``, its runtime pool and its own
scripted fake agent process) with a MemorySurface in place of a platform; the three relays run in
this one process (one event loop, one core's worth of Python between them: the figure is a floor,
not what three machines give). PostgreSQL is a throwaway cluster (``tests/postgres.py``:
``fsync=off``, on loopback, as on a LAN but without its latency). Each prompt makes the fake agent
answer at once.

1. Throughput: ``--conversations`` conversations, ``--messages`` messages each, all written at
   once; the messages go to the relays in turn (a load balancer), so most reach a relay that does
   not own their conversation and only journal and wake the owner. Messages per second until every
   answer was delivered, for one relay on SQLite and for three relays on PostgreSQL.
2. Latency to the first visible text, one message at a time in one conversation: from the message
   reaching a relay until the first send of its answer. SQLite (one relay), PostgreSQL with the
   message reaching the owner, and PostgreSQL with the message reaching another relay (journal,
   NOTIFY, the owner's pickup). The database's share = median(PostgreSQL) - median(SQLite); the
   target is under 20 ms at the median.

Printed, not asserted.

    python -m bench.bench_relays [--conversations 10] [--messages 20] [--turns 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from core.config import RelayConfig
from core.engine.blocks import Rendered, rendered_as
from core.engine.surface import Capabilities, InboundMessage
from core.lifecycle import Lifecycle
from core.plugin import SurfaceSettings
from core.store import Store
from tests.fakes.memory_surface import MemoryMessage, MemorySurface, attaching
from tests.postgres import PostgresServer

__all__ = ["main"]

FAKE_AGENT = Path(__file__).resolve().parent.parent / "tests" / "fakes" / "acp_agent.py"


class TimedSurface(MemorySurface):
    """Notes when the first message answering each inbound message was sent, and how many are answered."""

    def __init__(self) -> None:
        super().__init__(capabilities=Capabilities(max_message_length=4096, length_unit="utf16", can_edit=True,
                                                   edit_interval_s=0.01))
        self.first: dict[str, float] = {}
        self.done: set[str] = set()

    async def send(self, conversation_key: str, message: Rendered, **kw: Any) -> str:
        reply_to = kw.get("reply_to")
        if reply_to is not None and reply_to not in self.first:
            self.first[reply_to] = time.perf_counter()
        mid = await super().send(conversation_key, message, **kw)
        if reply_to is not None and "⏱" in rendered_as(message, MemoryMessage).markdown:
            self.done.add(reply_to)
        return mid

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, **kw: Any) -> None:
        await super().edit(conversation_key, message_id, message, **kw)
        if "⏱" in rendered_as(message, MemoryMessage).markdown:
            origin = self.messages[message_id].reply_to
            if origin is not None:
                self.done.add(origin)


def _config(tmp: Path, name: str, url_env: str | None) -> RelayConfig:
    store: dict[str, Any] = {"path": str(tmp / "relay.db"), "relay_name": name}
    if url_env is not None:
        store["url_env"] = url_env
    return RelayConfig.model_validate({
        "agents": {"fake": {"command": sys.executable, "args": [str(FAKE_AGENT)], "cwd": str(tmp),
                            "tool_gate": "allow"}},
        "store": store, "engine": {"edit_interval_s": 0.01, "queue_limit": 1000}})


async def _relays(tmp: Path, surface: TimedSurface, url: str | None, count: int) -> list[Lifecycle]:
    relays = []
    for i in range(count):
        if url is None:
            store = Store.open(tmp / "relay.db")
        else:
            from core.store.postgres import PostgresBackend

            store = Store.on(PostgresBackend.connect(url))
        relay = Lifecycle(_config(tmp, f"relay-{i}", "BENCH_DATABASE_URL" if url else None), store)
        await relay.launch("memory", attaching(surface, ["u"]), settings=SurfaceSettings(enabled=True))
        await relay.start()
        relays.append(relay)
    return relays


async def _until(pred: Any, timeout: float = 300.0) -> None:
    async with asyncio.timeout(timeout):
        while not pred():
            await asyncio.sleep(0.002)


async def throughput(tmp: Path, url: str | None, count: int, conversations: int, messages: int) -> float:
    """Messages per second through ``count`` relays (SQLite when ``url`` is None)."""
    surface = TimedSurface()
    relays = await _relays(tmp, surface, url, count)
    try:
        for c in range(conversations):  # every conversation's agent session exists before the clock starts
            await relays[c % count].engine.handle_message(InboundMessage("memory", f"memory:w{c}", "u", "hi", f"w{c}"))
        await _until(lambda: len(surface.done) == conversations)
        ids = [f"c{c}-m{m}" for m in range(messages) for c in range(conversations)]
        start = time.perf_counter()
        for i, mid in enumerate(ids):
            conversation = mid.split("-")[0].removeprefix("c")
            await relays[i % count].engine.handle_message(
                InboundMessage("memory", f"memory:w{conversation}", "u", "hi", mid))
        await _until(lambda: all(mid in surface.done for mid in ids))
        return len(ids) / (time.perf_counter() - start)
    finally:
        for relay in relays:
            await relay.close()


async def first_text(tmp: Path, url: str | None, turns: int, *, via_other: bool) -> list[float]:
    """Milliseconds from a message reaching a relay to its answer's first send, one at a time."""
    surface = TimedSurface()
    relays = await _relays(tmp, surface, url, 2 if url else 1)
    try:
        await relays[0].engine.handle_message(InboundMessage("memory", "memory:lat", "u", "hi", "warm"))
        await _until(lambda: "warm" in surface.done)
        receiver = relays[1] if via_other else relays[0]
        out = []
        for n in range(turns):
            mid = f"t{n}"
            sent = time.perf_counter()
            await receiver.engine.handle_message(InboundMessage("memory", "memory:lat", "u", "hi", mid))
            await _until(lambda m=mid: m in surface.done)  # type: ignore[misc]
            out.append((surface.first[mid] - sent) * 1000)
        return out
    finally:
        for relay in relays:
            await relay.close()


async def run(conversations: int, messages: int, turns: int) -> None:
    server = PostgresServer.start()
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            for name in "abcde":
                (tmp / name).mkdir()
            one = await throughput(tmp / "a", None, 1, conversations, messages)
            three = await throughput(tmp / "b", server.schema_url("bench"), 3, conversations, messages)
            print(f"throughput, {conversations} conversations x {messages} messages: one relay on SQLite "
                  f"{one:.0f} msg/s; three relays on PostgreSQL {three:.0f} msg/s ({three / one:.2f}x)")
            lite = await first_text(tmp / "c", None, turns, via_other=False)
            owner = await first_text(tmp / "d", server.schema_url("bench"), turns, via_other=False)
            other = await first_text(tmp / "e", server.schema_url("bench"), turns, via_other=True)
        base = statistics.median(lite)
        for label, values in (("SQLite, one relay", lite), ("PostgreSQL, received by the owner", owner),
                              ("PostgreSQL, received by another relay", other)):
            med = statistics.median(values)
            p90 = statistics.quantiles(values, n=10)[-1]
            added = "" if values is lite else f"; the database adds {med - base:.1f} ms at the median"
            print(f"first visible text, {label}: median {med:.1f} ms, p90 {p90:.1f} ms{added}")
        print("target: the database adds under 20 ms at the median")
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(run(args.conversations, args.messages, args.turns))


if __name__ == "__main__":
    main()
