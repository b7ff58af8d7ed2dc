"""The measured parts, each against a fresh fake: a burst (relay or naive bot), and the relay after
many known conversations (CPU and first text of new ones, RSS).

Every wait has a deadline, and a bot that exits stops the wait at once: a part that cannot finish
returns what it measured with the count of conversations left unanswered (``Run.missing``), or
raises ``Unfinished`` when there is nothing to measure (the bot never answered its warm-up).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.burst.on_dashboard import DashboardSide
from bench.burst.on_discord import DiscordSide
from bench.burst.on_slack import SlackSide
from bench.burst.on_telegram import TelegramSide
from bench.burst.platform import BEGIN, END, FOOTER, Platform, script
from bench.burst.procs import Bot, Profiler, Recording, naive_bot, relay
from bench.burst.stats import LoopLag, Timeline, pct

__all__ = ["SIDES", "Known", "Options", "Run", "Unfinished", "burst", "known"]

SIDES: dict[str, Callable[[Timeline], Platform]] = {
    "telegram": TelegramSide, "discord": DiscordSide, "slack": SlackSide, "dashboard": DashboardSide}
WARM_UP_S = 90.0


class Unfinished(Exception):
    """A part could not be measured at all (said in one line, with the bot's last log lines)."""


@dataclass
class Options:
    work: Path
    chunks: int = 10
    seconds: float = 1.0
    deadline_s: float | None = None
    batch: int = 250
    idle_s: float | None = None  # the relay's timeouts.idle_s (None: its default)
    heap: Path | None = None  # run the relay of the known part under tracemalloc, snapshots here
    agent: str = "scripted"  # the agent both bots run (``bench_agent.AGENTS``)
    profiler: Profiler = field(default_factory=lambda: Profiler(None))

    def deadline(self, size: int) -> float:
        return self.deadline_s if self.deadline_s is not None else 120.0 + 0.25 * size


@dataclass
class Run:
    """One group of conversations written at once, as measured."""

    bot: str
    size: int
    first: list[float]
    inbound: list[float]
    cpu_s: float
    agent_s: float
    wall_s: float
    missing: int
    fake_cpu_s: float
    lag_p95_s: float
    lag_max_s: float
    gc_max_s: float
    load: float  # the machine's 1-minute load average when the part ended (other work skews every figure)
    calls: dict[str, int] = field(default_factory=dict)
    #: The bot's own CPU from the first write until every conversation showed its first words (NaN if
    #: some never did): in a burst of people writing at once, the work each first answer waits behind.
    first_cpu_s: float = math.nan

    @property
    def p50(self) -> float:
        return pct(self.first, 0.5)

    @property
    def p95(self) -> float:
        return pct(self.first, 0.95)

    @property
    def cpu_ms(self) -> float:
        return self.cpu_s * 1e3 / self.size

    @property
    def agent_ms(self) -> float:
        return self.agent_s * 1e3 / self.size

    @property
    def first_cpu_ms(self) -> float:
        return self.first_cpu_s * 1e3 / self.size


@dataclass
class Known:
    """The relay after many known conversations."""

    idle_rss: int
    rss: dict[int, int] = field(default_factory=dict)  # known conversations -> RSS after them
    snapshots: dict[int, Path] = field(default_factory=dict)  # with --heap: 0 (idle) or known -> snapshot
    new: dict[int, Run] = field(default_factory=dict)  # known conversations -> the new ones after them
    fill_s: float = 0.0


def _progress(line: str) -> None:
    print(f"  .. {line}", file=sys.stderr, flush=True)


async def _finished_or_died(side: Platform, bot: Bot, timeout: float) -> bool:
    done = asyncio.create_task(side.timeline.wait(timeout))
    died = asyncio.create_task(bot.proc.wait())
    await asyncio.wait({done, died}, return_when=asyncio.FIRST_COMPLETED)
    died.cancel()
    if not done.done():
        done.cancel()
        return False
    return done.result()


async def _measure(side: Platform, bot: Bot, ids: range, text: str, timeout: float, profile: str = "",
                   profiler: Profiler | None = None) -> Run:
    await side.watch(ids)
    side.timeline.expect(ids)
    # The fakes keep every message: a full collection of this process then stalls its loop for hundreds
    # of ms, a delay the figures would take for the bot's. Collected before and after instead.
    gc.collect()
    gc.disable()
    try:
        return await _measured(side, bot, ids, text, timeout, profile, profiler)
    finally:
        gc.enable()
        gc.collect()


async def _measured(side: Platform, bot: Bot, ids: range, text: str, timeout: float, profile: str,
                    profiler: Profiler | None) -> Run:
    lag = LoopLag()
    bot.cpu.mark()
    fake_cpu = time.process_time()
    lag.start()
    started = time.monotonic()
    sampling = (profiler.sampling(bot.pid, profile) if profiler and profile
                else contextlib.nullcontext(Recording(None)))
    async with sampling as recording:
        until_first = recording if profiler is not None and profiler.until == "first" else None
        first_cpu = asyncio.create_task(_cpu_at_last_first_text(side, bot, until_first), name="bench-first-cpu")
        await asyncio.gather(*(side.write(i, text) for i in ids))
        finished = await _finished_or_died(side, bot, timeout)
        wall = time.monotonic() - started
        if finished:
            await bot.cpu.settle()
    own, agent = bot.cpu.since() if bot.alive() else (float("nan"), float("nan"))
    fake_cpu = time.process_time() - fake_cpu
    if not first_cpu.done():
        first_cpu.cancel()
    first_cpu_s = first_cpu.result() if first_cpu.done() and not first_cpu.cancelled() else math.nan
    lag_p95, lag_max = await lag.stop()
    await side.unwatch()
    return Run(bot.name, len(ids), side.timeline.first_text_s(), side.timeline.inbound_s(), own, agent, wall,
               side.timeline.missing(), fake_cpu, lag_p95, lag_max, lag.gc_max_s, os.getloadavg()[0],
               dict(side.timeline.calls), first_cpu_s)


async def _cpu_at_last_first_text(side: Platform, bot: Bot, recording: Recording | None = None) -> float:
    """The bot's own CPU seconds since its mark, read as the last conversation shows its first words
    (and ``recording`` stopped then)."""
    await side.timeline.all_first()
    cpu = bot.cpu.since()[0] if bot.alive() else math.nan
    if recording is not None:
        await recording.stop()
    return cpu


@contextlib.asynccontextmanager
async def _running(surface: str, kind: str, people: int, tmp: Path, agent: str, idle_s: float | None = None,
                   profiler: Profiler | None = None, heap: Path | None = None) -> AsyncIterator[tuple[Platform, Bot]]:
    """A fresh fake with ``people`` on it and a bot (``relay`` or ``naive``, running ``agent``) connected to
    it."""
    side = SIDES[surface](Timeline(BEGIN, (END, FOOTER) if kind == "relay" else (END,)))
    await side.start()
    try:
        side.people(people)
        if kind == "relay":
            bot = await relay(tmp, surface, side.relay_settings(), side.env(), idle_s, profiler, heap, agent)
        else:
            bot = await naive_bot(tmp, surface, side.naive_args(), side.env(), agent, profiler)
        try:
            yield side, bot
        finally:
            code = await bot.stop(kill=kind != "relay")
            if kind == "relay" and code != 0:
                _progress(f"{surface} relay exited {code}; its log: {bot.log}")
    finally:
        await side.close()


async def _warm_up(side: Platform, bot: Bot, i: int) -> None:
    """One conversation answered: the bot is connected, its agent started, its imports done."""
    await side.watch(range(i, i + 1))
    side.timeline.expect([i])
    try:
        await side.write(i, script(0, 0))
    except TimeoutError:  # a bot that never connected to the fake (Slack's socket, Discord's gateway)
        raise Unfinished(f"the {bot.name} bot never connected ({'running' if bot.alive() else 'exited'}):"
                         f"\n{bot.tail()}") from None
    ok = await _finished_or_died(side, bot, WARM_UP_S)
    await side.unwatch()
    if not ok:
        raise Unfinished(f"the {bot.name} bot never answered its first message (within {WARM_UP_S:.0f} s, "
                         f"{'running' if bot.alive() else 'exited'}):\n{bot.tail()}")


async def burst(surface: str, kind: str, size: int, opts: Options, tag: str = "") -> Run:
    """``size`` people write at once to a bot that has answered one conversation before."""
    name = f"{surface}-{kind}-{size}{tag}"
    async with _running(surface, kind, size + 1, opts.work / name, opts.agent,
                        profiler=opts.profiler) as (side, bot):
        await _warm_up(side, bot, size)
        return await _measure(side, bot, range(size), script(opts.chunks, opts.seconds), opts.deadline(size),
                              f"{surface}-burst-{size}{tag}{'-naive' if kind == 'naive' else ''}", opts.profiler)


async def known(surface: str, levels: list[int], new: int, opts: Options) -> Known:
    """The relay learns conversations (each speaks once, ``opts.batch`` at a time, a short answer); at each
    level of known conversations ``new`` more write at once (none with ``new`` 0: RSS only). RSS when
    idle and at each level (and tracemalloc snapshots with ``opts.heap``)."""
    top = max(levels)
    people = top + new * len(levels) + 1
    name = f"{surface}-known-{top}"
    heap = opts.heap / surface if opts.heap else None
    async with _running(surface, "relay", people, opts.work / name, opts.agent, opts.idle_s, opts.profiler,
                        heap) as (side, bot):
        await asyncio.sleep(1.0)
        await bot.cpu.settle(limit_s=15.0)
        found = Known(idle_rss=bot.cpu.rss())
        if (snap := await bot.snapshot()) is not None:
            found.snapshots[0] = snap
        await _warm_up(side, bot, people - 1)
        spoke, person = 1, 0
        started = time.monotonic()
        for level in sorted(levels):
            while spoke < level:
                ids = range(person, person + min(opts.batch, level - spoke))
                run = await _measure(side, bot, ids, script(0, 0), opts.deadline(len(ids)))
                if run.missing:
                    raise Unfinished(f"{run.missing} of {len(ids)} conversations were not answered within "
                                     f"{opts.deadline(len(ids)):.0f} s after {spoke} known:\n{bot.tail()}")
                person, spoke = person + len(ids), spoke + len(ids)
                if spoke % 1000 < opts.batch:
                    _progress(f"{surface}: {spoke} conversations known ({time.monotonic() - started:.0f} s)")
            await bot.cpu.settle()
            found.rss[spoke] = bot.cpu.rss()
            if (snap := await bot.snapshot()) is not None:
                found.snapshots[spoke] = snap
            if not new:
                continue
            ids = range(person, person + new)
            found.new[spoke] = await _measure(side, bot, ids, script(opts.chunks, opts.seconds),
                                              opts.deadline(new), f"{surface}-new-after-{spoke}", opts.profiler)
            person, spoke = person + new, spoke + new
        found.fill_s = time.monotonic() - started
        return found
