"""``acp-relay`` (or a naive bot) under cProfile, switched on and off by signals: CPU time of the event
loop's thread only.

A sampling profiler on a loaded machine counts a process waiting for a core as busy where it
happens to stand; cProfile's clock here is ``time.process_time``, so a profile says where the
relay's own CPU went, whatever else the machine runs. It costs: calls are several times slower
while it records (compare shares, not seconds, and never time a part that is profiled this way).

SIGUSR1 starts recording, SIGUSR2 stops it and writes ``$BENCH_CPROFILE_DIR/current.prof`` (written
aside and renamed, so a reader never sees half a file).

    BENCH_CPROFILE_DIR=DIR python -m bench.burst.cprofiled run --config FILE
    BENCH_CPROFILE_DIR=DIR python -m bench.burst.cprofiled --module bench.burst.naive_dashboard --cwd DIR
"""

from __future__ import annotations

import cProfile
import os
import runpy
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from core.cli import main as relay_main

__all__ = ["OUTPUT", "main"]

#: The file each SIGUSR2 writes, in ``$BENCH_CPROFILE_DIR``.
OUTPUT = "current.prof"


def main() -> int:
    """Run the relay's command line (or ``--module M`` and its arguments) with the two signals installed."""
    out_dir = Path(os.environ["BENCH_CPROFILE_DIR"])
    profile: list[cProfile.Profile] = []

    def start(_sig: int, _frame: FrameType | None) -> None:
        if not profile:
            profile.append(cProfile.Profile(time.process_time))
            profile[0].enable()

    def stop(_sig: int, _frame: FrameType | None) -> None:
        if profile:
            recorder = profile.pop()
            recorder.disable()
            aside = out_dir / f".{OUTPUT}.{os.getpid()}"
            recorder.dump_stats(aside)
            aside.replace(out_dir / OUTPUT)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    if sys.argv[1:2] == ["--module"]:
        module, *sys.argv[1:] = sys.argv[2:]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    return relay_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
