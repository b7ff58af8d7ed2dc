"""How fast recorded session/update frames go through our NDJSON reader, the SDK's, and bare json.loads.

The agent_message_chunk and usage_update frames of a real capture (claude-agent-acp 0.101.0) are
repeated to 200,000 lines and fed, from memory, through:

- ours: ``JsonRpcConnection.run`` over an ``asyncio.StreamReader``, no-op notification handler;
- sdk:  ``acp.connection.Connection`` (agent-client-protocol 0.12) over the same kind of stream, its
        receive loop delivering each notification to a no-op handler;
- bare: a ``json.loads`` loop over the same lines (the floor: no framing, no dispatch).

Ours and bare run ``--repeat`` times in the same process and the best run counts; the SDK, several
times slower, runs ``--sdk-repeat`` times (default once). Printed, not asserted.

    python -m bench.bench_reader [--frames 200000] [--repeat 3] [--sdk-repeat 1]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import time
from pathlib import Path
from typing import Any

from core.acp.connection import JsonRpcConnection

__all__ = ["bench_bare", "bench_ours", "bench_sdk", "load_frames", "main"]

CAPTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "captures" / "claude-new-mock-text.jsonl"
KINDS = ("agent_message_chunk", "usage_update")
STREAM_LIMIT = 50 * 1024 * 1024  # the SDK's own stdio default


def load_frames(count: int, capture: Path = CAPTURE) -> bytes:
    """``count`` NDJSON lines cycling through the capture's chunk and usage frames, byte for byte."""
    lines: list[bytes] = []
    for raw in capture.read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        data = entry.get("data")
        if entry.get("dir") != "agent->client" or not isinstance(data, dict):
            continue
        if data.get("method") == "session/update" and data["params"]["update"].get("sessionUpdate") in KINDS:
            lines.append(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())
    if not lines:
        raise SystemExit(f"no {KINDS} frames in {capture}")
    return b"".join(lines[i % len(lines)] + b"\n" for i in range(count))


class _NullWriter:
    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        pass

    async def wait_closed(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


def _stream(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def bench_ours(data: bytes, expected: int) -> float:
    seen = 0

    def on_notification(method: str, params: Any) -> None:
        nonlocal seen
        seen += 1

    async def on_request(method: str, params: Any) -> Any:
        return None

    reader = _stream(data)
    conn = JsonRpcConnection(reader, _NullWriter(), on_notification=on_notification,  # type: ignore[arg-type]
                             on_request=on_request)
    started = time.perf_counter()
    await conn.run()
    elapsed = time.perf_counter() - started
    assert seen == expected, (seen, expected)
    return elapsed


async def bench_sdk(data: bytes, expected: int) -> float:
    from acp.connection import Connection

    seen = 0
    all_seen = asyncio.Event()

    async def handler(method: str, params: Any, is_notification: bool) -> Any:
        nonlocal seen
        seen += 1
        if seen == expected:
            all_seen.set()
        return None

    reader = _stream(data)
    started = time.perf_counter()
    conn = Connection(handler, _NullWriter(), reader)  # type: ignore[arg-type]  # starts its receive loop
    await all_seen.wait()
    elapsed = time.perf_counter() - started
    await conn.close()
    assert seen == expected, (seen, expected)
    return elapsed


def bench_bare(data: bytes, expected: int) -> float:
    started = time.perf_counter()
    count = 0
    for line in data.split(b"\n"):
        if line:
            json.loads(line)
            count += 1
    elapsed = time.perf_counter() - started
    assert count == expected
    return elapsed


async def _best(runs: int, fn: Any, *args: Any) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        result = fn(*args)
        times.append(await result if asyncio.iscoroutine(result) else result)
    return min(times)


async def run(frames: int, repeat: int, sdk_repeat: int) -> dict[str, float]:
    data = load_frames(frames)
    return {
        "bare": await _best(repeat, bench_bare, data, frames),
        "ours": await _best(repeat, bench_ours, data, frames),
        "sdk": await _best(sdk_repeat, bench_sdk, data, frames),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sdk-repeat", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    times = asyncio.run(run(args.frames, args.repeat, args.sdk_repeat))
    size = len(load_frames(args.frames))
    print(f"reader: {args.frames:,} recorded session/update frames ({size / 2**20:.1f} MiB); "
          f"best of {args.repeat} (sdk: {args.sdk_repeat})")
    for name in ("ours", "sdk", "bare"):
        print(f"  {name:<4} {args.frames / times[name]:>12,.0f} frames/s  ({times[name]:.3f} s)")
    print(f"ours/sdk  = {times['sdk'] / times['ours']:.1f}x (target >= 1.5x)")
    print(f"bare/ours = {times['ours'] / times['bare']:.1f}x (target <= 3x)")


if __name__ == "__main__":
    main()
