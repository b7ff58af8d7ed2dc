"""CPU cost of streaming a huge answer: 1, 4 and 16 MB, measured in one run.

The answer arrives as 1 KB chunks into a ``Document``; every 64 chunks (64 KB, about a second of a
very fast agent) the streamer shows the reply so far, as its flusher does, on ``MemorySurface``
(Telegram-sized: 4096 UTF-16 units, a renderer that escapes), and finally delivers the last state.
Cost that grows linearly with the answer gives a 16 MB figure about 4 times the 4 MB one (the issue's
bound is 5 times). ``engine.max_answer_bytes`` is lifted for these rows, so the streaming itself is
measured; the last row streams 16 MB with the default cap (2 MB shown, the rest kept for a file).

    python -m bench.bench_huge [--sizes 1,4,16]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from core.acp.types import TextChunk
from core.config import EngineConfig
from core.engine.document import Document
from core.engine.streamer import Streamer
from core.engine.surface import Capabilities
from tests.fakes.memory_surface import MemorySurface

__all__ = ["main", "run"]

MB = 1024 * 1024
_PARAGRAPH = ("Some words of the answer. And **bold** and `code` here! " * 3 + "\n") * 5 + "\n"
_CODE = "```python\n" + "    value = compute(step)  # one more line of code\n" * 12 + "```\n\n"


def chunks(size: int, chunk: int = 1024) -> list[str]:
    """``size`` bytes of prose with a code block now and then, as ``chunk``-sized pieces."""
    block = (_PARAGRAPH * 3 + _CODE) * (chunk // 256 + 1)
    text = (block * (size // len(block) + 1))[:size]
    return [text[i:i + chunk] for i in range(0, size, chunk)]


async def run(size: int, *, max_bytes: int | None, every: int = 64) -> tuple[float, int, int]:
    """Stream ``size`` bytes; returns (CPU seconds, messages, platform calls)."""
    surface = MemorySurface(capabilities=Capabilities(max_message_length=4096, length_unit="utf16"))
    parts = chunks(size)
    started = time.process_time()
    doc = Document(max_bytes=max_bytes)
    streamer = Streamer(surface, "bench:1")
    for i, chunk in enumerate(parts, 1):
        doc.apply(TextChunk(chunk))
        if i % every == 0:
            await streamer.flush(doc.parts())
    doc.finish(1.0)
    ids = await streamer.finish(doc.parts())
    return time.process_time() - started, len(ids), len(surface.calls)


def main() -> None:
    """Print the CPU seconds per size and the 16 MB / 4 MB ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,16", help="answer sizes in MB")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    cpu: dict[int, float] = {}
    for mb in sizes:
        cpu[mb], messages, calls = asyncio.run(run(mb * MB, max_bytes=None))
        print(f"huge answer: {mb:>2} MB streamed in {cpu[mb]:6.2f} s CPU ({messages} messages, {calls} platform calls)")
    if 4 in cpu and 16 in cpu:
        print(f"huge answer: 16 MB costs {cpu[16] / cpu[4]:.1f}x the 4 MB figure (linear: 4x; bound: 5x)")
    cap = EngineConfig().max_answer_bytes
    capped, messages, _ = asyncio.run(run(max(sizes) * MB, max_bytes=cap))
    print(f"huge answer: {max(sizes)} MB with the default cap ({cap // MB} MB shown, the rest a file): "
          f"{capped:.2f} s CPU ({messages} messages)")


if __name__ == "__main__":
    main()
