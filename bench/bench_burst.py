"""A busy relay: bursts of conversations at once, new conversations after many known ones, and memory.

Each part runs the whole ``acp-relay run`` process against a platform's fake server, with one agent
process, and, for the bursts, a naive bot in the same run as the yardstick: a process of its own
written with the same platform library and the ACP SDK that sends one platform call per agent chunk,
with no pacing and no journal (``bench/burst/naive_<surface>.py``). Both bots run the same agent:
``--agent scripted`` (the default, the figures of record) is the scripted test agent, whose own CPU
per frame caps both bots in a burst of 1,000; ``--agent bench`` is a lean agent of one event loop
(``bench/burst/bench_agent.py``) that leaves the bots' own cost in view.

The fakes run in this process's event loop, beside nothing but the people writing: every part
prints how late that loop woke (its p95 stayed within a few ms, against first-text figures of 0.1 s
to a minute, and the fake used a fraction of one core), so the fake does not skew what it times;
a separate process would add a control channel and measure the same. The machine's other load does
skew everything: compare ratios measured in one run, and repeat (``--repeat``) where it matters.

1. Burst: ``--sizes`` people write at once, each in a conversation of their own, to a bot that has
   answered one conversation before. First visible text p50/p95 (from the message written to the
   first call showing the answer, timed at the fake), CPU per conversation of the bot's process
   (psutil: user + system; also the part spent until every conversation's first words showed, the
   work each first answer of a burst waits behind) and, apart, of its agent; relay against naive,
   and the largest size against the smallest.
2. Known: the relay learns conversations (each speaks once, a short answer); after ``--known`` of
   them, ``--new`` more write at once: CPU per new conversation and first text p50 at each level.
3. RSS of the relay after the most known conversations against the idle relay (connected, no
   conversation yet). The relay lets a session go once idle for ``timeouts.idle_s`` (1,800 s by
   default, longer than any part here): ``--idle-s`` sets it for the known part, to see the memory of
   a relay whose earlier conversations went idle. ``--new 0`` measures no new conversations (RSS
   only); ``--heap DIR`` runs that relay under tracemalloc and prints what grew, by holder (its RSS
   then includes tracemalloc's own: take the RSS figure from a run without it).

Printed, not asserted; the targets of issue 24 are printed beside the ratios.

    python -m bench.bench_burst [--surface telegram,discord,slack,dashboard] [--sizes 100,1000]
                                [--known 500,10000] [--new 500] [--repeat 1] [--idle-s S] [--profile DIR]
                                [--profiler py-spy|cprofile] [--profile-until end|first] [--rate HZ] [--heap DIR]
                                [--agent scripted|bench]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from bench.burst.bench_agent import AGENTS, command
from bench.burst.heap import diff_lines
from bench.burst.phases import SIDES, Known, Options, Run, Unfinished, burst, known
from bench.burst.procs import Profiler
from bench.burst.profile import DEFAULT_RATE
from core.descriptors import raise_open_files_limit

__all__ = ["main"]

MIB = 1024 * 1024


def _ints(text: str) -> list[int]:
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


def _s(seconds: float) -> str:
    if math.isnan(seconds):
        return "-"
    return f"{seconds:.3f} s" if seconds < 1 else f"{seconds:.2f} s"  # a burst of 100 is over in 0.1 s


def _x(ratio: float) -> str:
    return "-" if math.isnan(ratio) or math.isinf(ratio) else f"{ratio:.2f}x"


def _ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def _run_line(run: Run) -> str:
    unanswered = f", {run.missing} NOT ANSWERED within the deadline" if run.missing else ""
    return (f"  {run.bot:5}  first text p50 {_s(run.p50)}, p95 {_s(run.p95)} | CPU {run.cpu_ms:.1f} ms per "
            f"conversation ({run.first_cpu_ms:.1f} ms until the last first text; its agent {run.agent_ms:.1f} ms) | "
            f"all answered after {run.wall_s:.1f} s{unanswered}")


def _fake_line(run: Run) -> str:
    inbound = f"inbound leg p50 {_s(statistics.median(run.inbound))}; " if run.inbound else ""
    top = sorted(run.calls.items(), key=lambda kv: -kv[1])[:4]
    calls = ", ".join(f"{method} {n / run.size:.1f}" for method, n in top)
    return (f"    ({run.bot}: {sum(run.calls.values()) / run.size:.1f} platform calls per conversation ({calls}); "
            f"{inbound}the fake's process {run.fake_cpu_s:.1f} s CPU, its loop late by p95 "
            f"{run.lag_p95_s * 1e3:.0f} ms, at most {run.lag_max_s * 1e3:.0f} ms; its longest garbage collection "
            f"{run.gc_max_s * 1e3:.0f} ms; load average {run.load:.1f} on {os.cpu_count()} cores)")


def _spread(values: list[float]) -> str:
    values = [v for v in values if not math.isnan(v)]
    if len(values) < 2:
        return _x(values[0]) if values else "-"
    return f"{_x(statistics.median(values))} (runs: {', '.join(_x(v) for v in values)})"


async def bursts(surface: str, sizes: list[int], repeat: int, naive: bool, opts: Options,
                 say: Callable[[str], None]) -> dict[int, list[tuple[Run, Run | None]]]:
    found: dict[int, list[tuple[Run, Run | None]]] = {}
    for size in sizes:
        say(f"burst {surface}: {size:,} conversations write at once (answers of {opts.chunks} chunks over "
            f"{opts.seconds:g} s; agent {opts.agent})")
        for rep in range(repeat):
            tag = f"-{rep + 1}" if repeat > 1 else ""
            started = time.monotonic()
            mine = await burst(surface, "relay", size, opts, tag)
            theirs = await burst(surface, "naive", size, opts, tag) if naive else None
            found.setdefault(size, []).append((mine, theirs))
            say(_run_line(mine))
            if theirs is not None:
                say(_run_line(theirs))
                say(f"  relay/naive: first text p95 {_x(_ratio(mine.p95, theirs.p95))} (target <= 1.00x, pacing "
                    f"permitting), p50 {_x(_ratio(mine.p50, theirs.p50))}, CPU per conversation "
                    f"{_x(_ratio(mine.cpu_ms, theirs.cpu_ms))} (until the last first text "
                    f"{_x(_ratio(mine.first_cpu_ms, theirs.first_cpu_ms))})   [{time.monotonic() - started:.0f} s]")
            for run in (mine, theirs):
                if run is not None:
                    say(_fake_line(run))
        if repeat > 1 and naive:
            runs = found[size]
            say(f"  over {repeat} runs: relay/naive p95 {_spread([_ratio(m.p95, n.p95) for m, n in runs if n])}")
    if len(sizes) > 1:
        low, high = min(sizes), max(sizes)
        mine = [_ratio(h.cpu_ms, lo.cpu_ms) for (h, _), (lo, _) in zip(found[high], found[low], strict=True)]
        line = (f"burst {surface}: {high:,} vs {low:,} at once: relay CPU per conversation {_spread(mine)} "
                "(target <= 1.50x)")
        if naive:
            theirs = [_ratio(h.cpu_ms, lo.cpu_ms) for (_, h), (_, lo) in zip(found[high], found[low], strict=True)
                      if h and lo]
            line += f"; naive {_spread(theirs)}"
        say(line)
    return found


def report_known(surface: str, got: Known, new: int, say: Callable[[str], None],
                 idle_s: float | None = None) -> None:
    levels = sorted(got.new)
    for level in levels:
        run = got.new[level]
        unanswered = f", {run.missing} NOT ANSWERED" if run.missing else ""
        say(f"known {surface}: {new} new after {level:,} known: CPU {run.cpu_ms:.1f} ms per new conversation "
            f"(its agent {run.agent_ms:.1f} ms), first text p50 {_s(run.p50)}, p95 {_s(run.p95)}{unanswered}")
        say(_fake_line(run))
    if len(levels) > 1:
        low, high = got.new[levels[0]], got.new[levels[-1]]
        say(f"  after {levels[-1]:,} vs after {levels[0]:,} known: CPU per new conversation "
            f"{_x(_ratio(high.cpu_ms, low.cpu_ms))} (target <= 1.50x), first text p50 {_x(_ratio(high.p50, low.p50))}"
            f"   [filling and measuring took {got.fill_s:.0f} s]")
    rss = ", ".join(f"after {k:,} known {v / MIB:.1f} MiB" for k, v in sorted(got.rss.items()))
    top = max(got.rss)
    growth = (got.rss[top] - got.idle_rss) / MIB
    idle = f"; idle sessions let go after {idle_s:g} s" if idle_s is not None else ""
    say(f"rss {surface}: idle {got.idle_rss / MIB:.1f} MiB; {rss}: growth {growth:.1f} MiB over idle "
        f"after {top:,} conversations that each spoke once (target < 50 MiB{idle})")
    if 0 in got.snapshots and top in got.snapshots:
        before, after = (tracemalloc.Snapshot.load(str(got.snapshots[k])) for k in (0, top))
        say(f"heap {surface}: idle -> after {top:,} known (tracemalloc; {got.snapshots[top]})")
        for line in diff_lines(before, after):
            say(f"  {line}")


async def run(args: argparse.Namespace) -> int:
    surfaces = [s for s in args.surface.split(",") if s]
    unknown = [s for s in surfaces if s not in SIDES]
    if unknown:
        raise SystemExit(f"no such surface: {', '.join(unknown)} (there are {', '.join(SIDES)})")

    def say(line: str) -> None:
        print(line, flush=True)

    # A bot killed at the end of its part drops its open requests: the fakes' server would log each.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp:
        work = Path(args.keep).resolve() if args.keep else Path(tmp)
        profiler = Profiler(Path(args.profile).resolve() if args.profile else None, args.profiler, args.profile_until,
                            args.rate)
        opts = Options(work, chunks=args.chunks, seconds=args.seconds, deadline_s=args.deadline_s,
                       batch=args.batch, idle_s=args.idle_s, profiler=profiler,
                       heap=Path(args.heap).resolve() if args.heap else None, agent=args.agent)
        say(f"agent: {args.agent} ({' '.join(command(args.agent))}), for the relay and the naive bot alike")
        for surface in surfaces:
            started = time.monotonic()
            try:
                if args.sizes:
                    await bursts(surface, args.sizes, args.repeat, not args.no_naive, opts, say)
                if args.known:
                    got = await known(surface, args.known, args.new, opts)
                    report_known(surface, got, args.new, say, args.idle_s)
            except Unfinished as exc:
                failed += 1
                say(f"{surface}: could not finish: {exc}")
            say(f"  [{surface}: {time.monotonic() - started:.0f} s in all]")
    if args.profile:
        rate = f" --rate {args.rate}" if args.profiler == "py-spy" and args.rate != DEFAULT_RATE else ""
        say(f"profiles ({args.profiler}): {args.profile}; top entries: python -m bench.burst.profile FILE{rate}")
    return 1 if failed else 0


def main() -> None:
    """Run the parts asked for, per surface, and print their figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surface", "--surfaces", dest="surface", default=",".join(SIDES),
                        help="comma-separated, of " + ", ".join(SIDES))
    parser.add_argument("--sizes", type=_ints, default=[100, 1000], help="burst sizes ('' for none)")
    parser.add_argument("--known", type=_ints, default=[500, 10_000], help="known levels ('' for none)")
    parser.add_argument("--new", type=int, default=500,
                        help="new conversations at each known level (0: none, RSS only)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each burst (relay, then naive, again)")
    parser.add_argument("--no-naive", action="store_true", help="no naive bot")
    parser.add_argument("--chunks", type=int, default=10, help="chunks of each measured answer")
    parser.add_argument("--seconds", type=float, default=1.0, help="how long each measured answer streams")
    parser.add_argument("--batch", type=int, default=250, help="known conversations written at once")
    parser.add_argument("--idle-s", type=float, default=None,
                        help="the relay's timeouts.idle_s in the known part (idle sessions let go after it; "
                             "default: the relay's own, 1,800 s, which no part of this run reaches)")
    parser.add_argument("--deadline-s", type=float, default=None,
                        help="per group written at once (default 120 s + 0.25 s per conversation)")
    parser.add_argument("--profile", default="",
                        help="record the relay and the naive bot into this directory (see --profiler)")
    parser.add_argument("--profiler", choices=("py-spy", "cprofile"), default="py-spy",
                        help="py-spy samples (raw stacks; a loaded machine skews them); cprofile records the "
                             "relay's CPU time by function (exact, but it slows the relay: its timings are not "
                             "figures)")
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE,
                        help="py-spy's samples a second (above 100 it samples without pausing the relay: "
                             "a burst's last first text is too short a window for 100 a second)")
    parser.add_argument("--profile-until", choices=("end", "first"), default="end",
                        help="end: record each phase whole; first: stop a burst's recording as the last "
                             "conversation shows its first words (the work each first answer waits behind)")
    parser.add_argument("--heap", default="",
                        help="run the known part's relay under tracemalloc, snapshots in this directory")
    parser.add_argument("--agent", choices=AGENTS, default="scripted",
                        help="the agent both bots run: the scripted test agent (default; the figures of record) "
                             "or the lean bench agent, whose own cost per frame is small enough not to cap "
                             "either bot in a burst of 1,000")
    parser.add_argument("--keep", default="", help="keep stores, configs and logs in this directory")
    args = parser.parse_args()
    raise_open_files_limit()  # the people's 2,000 connections in a burst of 1,000 tabs; the naive bots inherit it
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
