"""How many platform calls the streamer makes for one long streamed reply.

A 2,000-chunk answer arrives over 10 s of virtual time and is streamed through ``Streamer`` to
``MemorySurface`` (Telegram-sized: 4096 UTF-16 units, 1 edit/s). The clock is virtual, so the
benchmark takes well under a second of real time. Figures are printed, not asserted.

    python -m bench.bench_streamer [--chunks 2000] [--seconds 10] [--interval 1]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from core.engine.streamer import Streamer
from core.engine.surface import Capabilities
from tests.fakes.memory_surface import FakeClock, MemorySurface

__all__ = ["main", "run"]


async def run(chunks: int, seconds: float, interval: float) -> tuple[int, int, int]:
    """Stream the reply; returns (platform calls, edits, messages)."""
    surface = MemorySurface(capabilities=Capabilities(max_message_length=4096, length_unit="utf16",
                                                      edit_interval_s=interval))
    clock = FakeClock()
    step = seconds / chunks

    async def scenario() -> list[str]:
        text = ""
        async with Streamer(surface, "bench:1", sleep=clock.sleep) as streamer:
            for i in range(chunks):
                text += f"tok{i % 97} " if i % 40 else "\n\n"
                streamer.update(text)
                await clock.sleep(step)
            return await streamer.finish(text)

    ids = await clock.run(scenario())
    return len(surface.calls), surface.count("edit"), len(ids)


def main() -> None:
    """Print calls per reply for the streamer and for one edit per chunk."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    started = time.perf_counter()
    calls, edits, messages = asyncio.run(run(args.chunks, args.seconds, args.interval))
    wall = time.perf_counter() - started
    rate = f"{1 / args.interval:g} edit/s"
    print(f"streamer: {calls} platform calls per {args.chunks}-chunk reply ({rate} over {args.seconds:g} s; "
          f"{edits} edits, {messages} messages) vs {args.chunks} naive: {args.chunks / calls:.0f}x fewer")
    print(f"wall time {wall:.2f} s (virtual clock)")


if __name__ == "__main__":
    main()
