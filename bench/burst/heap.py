"""``acp-relay`` under tracemalloc, for the burst bench's ``--heap``: which holders grow with conversations.

Run as ``python -m bench.burst.heap OUT_DIR <acp-relay arguments>``: the relay runs as usual with
tracemalloc tracing (a few frames per allocation, which slows it and adds its own memory, so the RSS
of such a run is not the figure to report) and writes a snapshot to ``OUT_DIR/<n>.snap`` on each
SIGUSR2. ``python -m bench.burst.heap --diff A.snap B.snap`` prints what grew between two snapshots,
by the line that allocated it and by the file (the biggest holders first).
"""

from __future__ import annotations

import argparse
import itertools
import signal
import sys
import tracemalloc
from pathlib import Path

__all__ = ["diff_lines", "main"]

FRAMES = 8
#: Allocations of tracemalloc itself and of this module are left out of the comparison.
_IGNORE = (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__),
           tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"))


def _traced(out_dir: Path, argv: list[str]) -> int:
    from core.cli import main as relay_main

    out_dir.mkdir(parents=True, exist_ok=True)
    counter = itertools.count(1)

    def dump(signum: int, frame: object) -> None:
        # Written aside and renamed: the bench waits for the name, then reads a whole file.
        name = out_dir / f"{next(counter)}.snap"
        tracemalloc.take_snapshot().dump(str(name.with_suffix(".part")))
        name.with_suffix(".part").rename(name)

    tracemalloc.start(FRAMES)
    signal.signal(signal.SIGUSR2, dump)
    return relay_main(argv)


def _ours(frame: tracemalloc.Frame) -> bool:
    return "/site-packages/" not in frame.filename and "/lib/python3" not in frame.filename


def diff_lines(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, top: int = 15) -> list[str]:
    """What grew from ``before`` to ``after``: by allocating line, by the innermost frame of our own code
    (the holder in core/ or surfaces/ that made a library allocate), and by file."""
    a, b = before.filter_traces(_IGNORE), after.filter_traces(_IGNORE)
    out = [f"traced: {sum(s.size for s in a.statistics('filename')) / 2**20:.1f} MiB -> "
           f"{sum(s.size for s in b.statistics('filename')) / 2**20:.1f} MiB"]
    for key in ("lineno", "filename"):
        out.append(f"  grew most, by {key}:")
        for stat in b.compare_to(a, key)[:top]:
            where = stat.traceback[0]
            out.append(f"    {stat.size_diff / 2**20:7.2f} MiB {stat.count_diff:+8d} blocks  "
                       f"{where.filename}:{where.lineno if key == 'lineno' else ''}")
    grown: dict[str, list[int]] = {}
    for stat in b.compare_to(a, "traceback"):
        if stat.size_diff <= 0:
            continue
        mine = next((f for f in stat.traceback if _ours(f)), stat.traceback[0])
        entry = grown.setdefault(f"{mine.filename}:{mine.lineno}", [0, 0])
        entry[0] += stat.size_diff
        entry[1] += stat.count_diff
    out.append("  grew most, by the innermost line of our own code on the allocating stack:")
    for where, (size, count) in sorted(grown.items(), key=lambda kv: -kv[1][0])[:top]:
        out.append(f"    {size / 2**20:7.2f} MiB {count:+8d} blocks  {where}")
    return out


def main() -> None:
    """Run the relay traced (``OUT_DIR args...``) or compare two snapshots (``--diff A B``)."""
    if len(sys.argv) > 1 and sys.argv[1] == "--diff":
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--diff", nargs=2, type=Path, required=True)
        parser.add_argument("--top", type=int, default=15)
        args = parser.parse_args()
        before, after = (tracemalloc.Snapshot.load(str(p)) for p in args.diff)
        print("\n".join(diff_lines(before, after, args.top)))
        return
    sys.exit(_traced(Path(sys.argv[1]), sys.argv[2:]))


if __name__ == "__main__":
    main()
