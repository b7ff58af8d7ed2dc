"""What our ACP stack adds to a prompt turn, and what an idle session costs in memory.

Turn overhead: the scripted fake agent answers at once (one agent_message_chunk, then end_turn).
The same script runs ``--turns`` times through our stack (``AcpSession.prompt`` on an
``AcpRuntime``) and as a raw stdio round trip (write the session/prompt line, read lines until its
response) to a second process of the same agent, turns interleaved so both see the same machine.
Added latency = median(ours) - median(raw).

Memory: ``--sessions`` sessions created on one shared runtime; the tracemalloc difference in our
process divided by the count. Printed, not asserted.

    python -m bench.bench_turns [--turns 500] [--sessions 500]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec

__all__ = ["RawClient", "main", "memory_per_session", "turn_overhead"]

FAKE_AGENT = Path(__file__).resolve().parent.parent / "tests" / "fakes" / "acp_agent.py"
SCRIPT = "text hi"


def _spec(cwd: str) -> AgentSpec:
    return AgentSpec(name="fake", command=sys.executable, args=(str(FAKE_AGENT),), cwd=cwd, tool_gate="allow")


class RawClient:
    """The least a client can do: write one line, read lines until the answer with our id."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    @classmethod
    async def start(cls, cwd: str) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(FAKE_AGENT), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, cwd=cwd, limit=2**24)
        return cls(proc)

    async def request(self, method: str, params: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        rid = self.next_id
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                                         separators=(",", ":")).encode() + b"\n")
        await self.proc.stdin.drain()
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise EOFError("the agent closed stdout")
            frame = json.loads(line)
            if frame.get("id") == rid and "method" not in frame:
                return frame.get("result")

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()


async def turn_overhead(turns: int, warmup: int = 20) -> tuple[list[float], list[float]]:
    """Per-turn seconds (ours, raw), interleaved."""
    with tempfile.TemporaryDirectory() as cwd:
        runtime = await AcpRuntime.start(_spec(cwd))
        raw = await RawClient.start(cwd)
        try:
            session = await runtime.new_session()
            await raw.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            raw_sid = (await raw.request("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]
            raw_params = {"sessionId": raw_sid, "prompt": [{"type": "text", "text": SCRIPT}]}
            ours: list[float] = []
            bare: list[float] = []
            for i in range(warmup + turns):
                started = time.perf_counter()
                stats = await session.prompt(SCRIPT)
                mid = time.perf_counter()
                result = await raw.request("session/prompt", raw_params)
                ended = time.perf_counter()
                assert stats.text == "hi" and stats.stop_reason == "end_turn", stats
                assert result == {"stopReason": "end_turn"}, result
                if i >= warmup:
                    ours.append(mid - started)
                    bare.append(ended - mid)
            return ours, bare
        finally:
            await raw.close()
            await runtime.close()


async def memory_per_session(count: int) -> tuple[float, int]:
    """(bytes per idle session, sessions on the runtime)."""
    with tempfile.TemporaryDirectory() as cwd:
        runtime = await AcpRuntime.start(_spec(cwd))
        try:
            for _ in range(5):  # warm caches (interned strings, code paths) before measuring
                await runtime.new_session()
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.take_snapshot()
            for _ in range(count):
                await runtime.new_session()
            gc.collect()
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
            grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
            return grown / count, len(runtime.sessions)
        finally:
            await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=500)
    args = parser.parse_args()
    ours, raw = asyncio.run(turn_overhead(args.turns))
    med_ours, med_raw = statistics.median(ours), statistics.median(raw)
    paired = statistics.median(o - r for o, r in zip(ours, raw, strict=True))
    print(f"turns: {args.turns} turns of {SCRIPT!r} with the fake agent answering at once")
    print(f"  ours  median {med_ours * 1e3:.3f} ms/turn   raw stdio round trip median {med_raw * 1e3:.3f} ms/turn")
    print(f"  median added latency per turn = {(med_ours - med_raw) * 1e3:.3f} ms "
          f"(paired median {paired * 1e3:.3f} ms) (target < 2 ms)")
    per_session, sessions = asyncio.run(memory_per_session(args.sessions))
    print(f"memory: {sessions} sessions on one runtime; {per_session / 1024:.1f} KiB per idle session "
          "(tracemalloc, our process) (target < 200 KiB)")


if __name__ == "__main__":
    main()
