"""The processes under measurement: ``acp-relay run`` and a naive bot, each with its own agent process.

Both are started with a clean environment (no tokens or proxies from the developer's shell, HOME and
the state directory under the run's own directory). Both run the same agent (``bench_agent.AGENTS``:
the scripted test agent, or the lean bench agent). CPU is read with psutil as user + system time of
the bot's own process, and separately of its children (its agent); RSS of the bot's process.
A profile can be taken of the relay with py-spy while a phase runs (``Profiler``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil

from bench.burst.bench_agent import AGENT_ENV
from bench.burst.bench_agent import command as agent_command
from bench.burst.cprofiled import OUTPUT
from bench.burst.profile import DEFAULT_RATE

__all__ = ["Bot", "Cpu", "Profiler", "Recording", "naive_bot", "py_spy_arguments", "relay"]

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("acp-relay")
_OURS = ("ACP_", "XDG_", "TELEGRAM_", "DISCORD_", "SLACK_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def _environ(tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(_OURS)}
    env.update(HOME=str(tmp), XDG_STATE_HOME=str(tmp / "state"), PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1",
               **extra)
    return env


class Cpu:
    """CPU seconds (user + system) of a process and, apart, of its children, since ``mark``."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self._own = 0.0
        self._kids: dict[int, float] = {}

    @staticmethod
    def _cpu(proc: psutil.Process) -> float:
        times = proc.cpu_times()
        return float(times.user + times.system)

    def _children(self) -> dict[int, float]:
        found = {}
        for child in self.proc.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                found[child.pid] = self._cpu(child)
        return found

    def mark(self) -> None:
        self._own = self._cpu(self.proc)
        self._kids = self._children()

    def since(self) -> tuple[float, float]:
        """(own, children) CPU seconds since ``mark`` (a child started since counts from zero)."""
        kids = self._children()
        return (self._cpu(self.proc) - self._own,
                sum(t - self._kids.get(pid, 0.0) for pid, t in kids.items()))

    def rss(self) -> int:
        return int(self.proc.memory_info().rss)

    async def settle(self, *, quiet: float = 0.03, window_s: float = 0.5, limit_s: float = 10.0) -> None:
        """Wait until the process uses less than ``quiet`` of a core over ``window_s`` (its trailing work
        after the last answer: journaling, indicators), at most ``limit_s``."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            before = self._cpu(self.proc)
            await asyncio.sleep(window_s)
            if self._cpu(self.proc) - before < quiet * window_s:
                return


class Bot:
    """A bot process (the relay or the naive one); its output goes to ``log``."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, log: Path, heap: Path | None = None) -> None:
        self.name = name
        self.proc = proc
        self.log = log
        self.heap = heap
        self.cpu = Cpu(proc.pid)
        self._snapshots = 0

    async def snapshot(self) -> Path | None:
        """A tracemalloc snapshot of a relay run with ``heap`` (None otherwise): its file, once written."""
        if self.heap is None:
            return None
        self._snapshots += 1
        path = self.heap / f"{self._snapshots}.snap"
        self.proc.send_signal(signal.SIGUSR2)
        async with asyncio.timeout(300):
            while not path.exists():
                await asyncio.sleep(0.2)
        return path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.returncode is None

    def tail(self, lines: int = 15) -> str:
        """The last lines of its output and, for the relay, of its log file (why it did not finish)."""
        out = []
        for path in (self.log, self.log.parent / "state" / "acp-relay" / "acp-relay.log"):
            if path.exists():
                out += path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
        return "\n".join(out)

    async def stop(self, *, kill: bool = False) -> int | None:
        """SIGTERM (SIGKILL with ``kill``, or after 20 s), its children too; the exit code, None if killed."""
        if self.proc.returncode is not None:
            return self.proc.returncode
        if not kill:
            self.proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(20):
                    return await self.proc.wait()
            except TimeoutError:
                pass
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                child.kill()
        self.proc.kill()
        await self.proc.wait()
        return None


async def relay(tmp: Path, surface: str, settings: dict[str, Any], env: dict[str, str],
                idle_s: float | None = None, profiler: Profiler | None = None, heap: Path | None = None,
                agent: str = "scripted") -> Bot:
    """``acp-relay run`` with ``agent`` (of ``bench_agent.AGENTS``) and one surface; production defaults
    otherwise (but ``timeouts.idle_s`` when given). A cProfile ``profiler`` runs it under
    ``bench.burst.cprofiled``; with ``heap``, under tracemalloc (``bench.burst.heap``), its snapshots
    written there."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "work").mkdir(exist_ok=True)
    program, *args = agent_command(agent)
    config: dict[str, Any] = {"agents": {"fake": {"command": program, "args": args, "cwd": str(tmp / "work")}},
                              "store": {"path": str(tmp / "relay.db")},
                              "surfaces": {"dashboard": {"enabled": False}, surface: settings}}
    if idle_s is not None:
        config["timeouts"] = {"idle_s": idle_s}
    path = tmp / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    log = tmp / "relay.out"
    command = [str(CLI)] if heap is None else [sys.executable, "-m", "bench.burst.heap", str(heap)]
    if heap is None and profiler is not None and profiler.kind == "cprofile" and profiler.out_dir is not None:
        command = [sys.executable, "-m", "bench.burst.cprofiled"]
        env = {**env, "BENCH_CPROFILE_DIR": str(profiler.out_dir)}
        profiler.out_dir.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = await asyncio.create_subprocess_exec(*command, "run", "--config", str(path), cwd=tmp,
                                                    env=_environ(tmp, env), stdout=out, stderr=out)
    return Bot("relay", proc, log, heap)


async def naive_bot(tmp: Path, surface: str, args: list[str], env: dict[str, str],
                    agent: str = "scripted", profiler: Profiler | None = None) -> Bot:
    """``python -m bench.burst.naive_<surface>`` with ``agent`` (named to it in ``AGENT_ENV``); under
    ``bench.burst.cprofiled`` for a cProfile ``profiler``, as the relay is."""
    agent_command(agent)  # an unknown name fails here, not in the bot's process
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "work").mkdir(exist_ok=True)
    log = tmp / "naive.out"
    module = ["-m", f"bench.burst.naive_{surface}"]
    if profiler is not None and profiler.out_dir is not None and profiler.kind == "cprofile":
        module = ["-m", "bench.burst.cprofiled", "--module", module[1]]
        env = {**env, "BENCH_CPROFILE_DIR": str(profiler.out_dir)}
        profiler.out_dir.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, *module, "--cwd", str(tmp / "work"), *args, cwd=ROOT,
            env=_environ(tmp, {**env, AGENT_ENV: agent}), stdout=out, stderr=out)
    return Bot("naive", proc, log)


class Recording:
    """A profile being recorded: ``stop()`` ends it early (the phase's end stops it otherwise)."""

    def __init__(self, out: Path | None, stop: Callable[[], Awaitable[None]] | None = None) -> None:
        self.out = out  # the profile's file (None: nothing is recorded)
        self._stop = stop

    async def stop(self) -> None:
        """End the recording now (once; later calls do nothing)."""
        stop, self._stop = self._stop, None
        if stop is not None:
            await stop()


def py_spy_arguments(pid: int, out: Path, rate: int = DEFAULT_RATE) -> list[str]:
    """``py-spy record``'s arguments: raw stacks by function, ``rate`` samples a second; above py-spy's own
    rate without pausing the process for each sample (``Profiler``)."""
    pausing = [] if rate <= DEFAULT_RATE else ["--nonblocking"]
    return ["record", "--pid", str(pid), "--format", "raw", "--function", "--rate", str(rate), *pausing,
            "-o", str(out)]


class Profiler:
    """A profile of the relay while a phase runs. ``py-spy`` samples it (its raw stacks, by function:
    ``profile`` reads them); py-spy pauses the process for each sample, 100 a second: a little CPU, a
    little latency, and on a loaded machine a process waiting for a core counts as busy where it stands.
    ``cprofile`` records the relay's CPU time by function (``bench.burst.cprofiled``, switched on for
    the phase only): exact, but it slows every call several times, so the phase's timings are not
    figures to keep.

    ``until``: ``"end"`` records the whole phase; ``"first"`` stops a burst's recording as the last
    conversation shows its first words, so the profile holds the work every first answer waited behind.

    ``rate``: py-spy's samples a second. Above its default of 100, py-spy samples without pausing the
    relay (``--nonblocking``): paused 1,000 times a second, a dashboard relay's first words in a burst of
    1,000 came at p50 6.3 s instead of 0.9 s; sampled so without pausing, at 1.4 s.
    """

    def __init__(self, out_dir: Path | None, kind: str = "py-spy", until: str = "end",
                 rate: int = DEFAULT_RATE) -> None:
        self.out_dir = out_dir
        self.kind = kind
        self.until = until
        self.rate = rate
        self.exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))

    @contextlib.asynccontextmanager
    async def sampling(self, pid: int, name: str) -> AsyncIterator[Recording]:
        """Record ``pid`` while the block runs (or until its recording is stopped)."""
        if self.out_dir is None:
            yield Recording(None)
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        recording = await (self._cprofile(pid, name) if self.kind == "cprofile" else self._py_spy(pid, name))
        try:
            yield recording
        finally:
            await recording.stop()

    async def _py_spy(self, pid: int, name: str) -> Recording:
        assert self.out_dir is not None
        out = self.out_dir / f"{name}.txt"
        proc = await asyncio.create_subprocess_exec(
            self.exe, *py_spy_arguments(pid, out, self.rate), stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL)

        async def stop() -> None:
            if proc.returncode is None:
                proc.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            try:
                async with asyncio.timeout(30):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()
        return Recording(out, stop)

    async def _cprofile(self, pid: int, name: str) -> Recording:
        assert self.out_dir is not None
        written = self.out_dir / OUTPUT
        written.unlink(missing_ok=True)
        out = self.out_dir / f"{name}.prof"
        os.kill(pid, signal.SIGUSR1)

        async def stop() -> None:
            os.kill(pid, signal.SIGUSR2)
            deadline = time.monotonic() + 30.0
            while not written.exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            if written.exists():
                written.replace(out)
        return Recording(out, stop)
