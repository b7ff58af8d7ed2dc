"""The runtime pool: one agent process per (agent, cwd), reaped when idle, respawned on faults."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import Any

from core.acp.client import AcpProcessDied
from core.acp.connection import DEFAULT_LINE_CAP
from core.acp.runtime import AcpRuntime
from core.acp.session_handle import AcpRequestTimeout, AcpRuntimeDead
from core.acp.spec import AgentSpec, resolve_cwd

__all__ = ["RuntimePool"]

log = logging.getLogger("acp_relay.acp.pool")


class RuntimePool:
    """Hands out live runtimes. A dead one is replaced on next use while the respawn budget lasts.

    The budget is spent only on transport faults (the process died). AcpAuthRequired,
    AcpToolGateUnroutable and AcpModelUnavailable are configuration facts: they propagate at once
    and cost nothing, because a respawn would read the same answer again.
    """

    def __init__(
        self, *, request_timeout_s: float = 30.0, idle_s: float = 1800.0, respawn_budget: int = 3,
        respawn_window_s: float = 300.0, line_cap: int = DEFAULT_LINE_CAP,
    ) -> None:
        self.request_timeout_s = request_timeout_s
        self.idle_s = idle_s
        self.respawn_budget = respawn_budget
        self.respawn_window_s = respawn_window_s
        self.line_cap = line_cap
        self._runtimes: dict[tuple[str, str], AcpRuntime] = {}
        self._deaths: dict[tuple[str, str], deque[float]] = {}
        self._last_death: dict[tuple[str, str], AcpRuntimeDead] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False
        self._closing: set[AcpRuntime] = set()  # taken out by the reaper, not yet stopped
        # (agent, cwd as configured) -> the live runtime it resolved to: a new conversation in a folder
        # whose agent runs is handed that agent without resolving the folder on disk again (its
        # symlinks, one system call per path component: a few percent of the CPU of a burst's first
        # answers). Its conversations already keep their session there; once it is gone, the next
        # acquire resolves the folder anew.
        self._spelled: dict[tuple[str, str], tuple[tuple[str, str], AcpRuntime]] = {}
        self.spawned = 0

    @staticmethod
    def key(spec: AgentSpec, cwd: str | None = None) -> tuple[str, str]:
        """The pool key of an agent: its name and the resolved directory it runs in."""
        return spec.name, str(resolve_cwd(cwd or spec.cwd))

    async def acquire(self, spec: AgentSpec, cwd: str | None = None) -> AcpRuntime:
        """A live runtime for (agent, cwd), spawning or respawning it as needed."""
        if self._closed:
            raise AcpRuntimeDead("the relay is shutting down")
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever(), name="acp-pool-reaper")
        spelled = (spec.name, cwd or spec.cwd)
        known = self._spelled.get(spelled)
        if known is not None:
            key, runtime = known
            if runtime.alive and self._runtimes.get(key) is runtime:  # still the pool's, and running
                runtime.last_used = time.monotonic()
                return runtime
            del self._spelled[spelled]
        key = self.key(spec, cwd)
        runtime = await self._acquire(key, spec, cwd)
        self._spelled[spelled] = key, runtime
        return runtime

    async def _acquire(self, key: tuple[str, str], spec: AgentSpec, cwd: str | None) -> AcpRuntime:
        async with self._locks.setdefault(key, asyncio.Lock()):
            runtime = self._runtimes.get(key)
            if runtime is not None and runtime.alive:
                runtime.last_used = time.monotonic()
                return runtime
            if runtime is not None:  # it died: a transport fault, which spends the budget
                del self._runtimes[key]
                self._record_death(key, runtime.death)
                await runtime.close()
            self._check_budget(key)
            target = spec.with_cwd(cwd) if cwd else spec
            try:
                runtime = await AcpRuntime.start(target, request_timeout_s=self.request_timeout_s,
                                                 line_cap=self.line_cap)
            except AcpProcessDied as exc:  # a crash at start-up is a transport fault too
                self._record_death(key, AcpRuntimeDead(str(exc), exit_code=exc.exit_code,
                                                       stderr_tail=exc.stderr_tail))
                raise
            except AcpRequestTimeout as exc:  # so is an agent that never answers initialize
                self._record_death(key, AcpRuntimeDead(str(exc)))
                raise
            if self._closed:  # the pool closed while this agent was starting
                await runtime.close()
                raise AcpRuntimeDead("the relay is shutting down")
            self.spawned += 1
            self._runtimes[key] = runtime
            return runtime

    def _record_death(self, key: tuple[str, str], death: AcpRuntimeDead | None) -> None:
        self._deaths.setdefault(key, deque()).append(time.monotonic())
        if death is not None:
            self._last_death[key] = death

    def _check_budget(self, key: tuple[str, str]) -> None:
        """Refuse to spawn once more than ``respawn_budget`` deaths fell within the window."""
        deaths = self._deaths.get(key)
        if not deaths:
            return
        now = time.monotonic()
        while deaths and now - deaths[0] > self.respawn_window_s:
            deaths.popleft()
        if len(deaths) > self.respawn_budget:
            last = self._last_death.get(key)
            raise AcpRuntimeDead(
                f"agent {key[0]} died {len(deaths)} times within {self.respawn_window_s:g}s; "
                "not restarting it again for now",
                exit_code=last.exit_code if last else None, stderr_tail=last.stderr_tail if last else "")

    def runtimes(self) -> list[AcpRuntime]:
        """A snapshot of the held runtimes (a dead one stays until its next ``acquire``)."""
        return list(self._runtimes.values())

    async def reap(self, now: float | None = None) -> int:
        """Close runtimes idle longer than ``idle_s`` (no turn running). Returns how many."""
        now = time.monotonic() if now is None else now
        reaped = 0
        for key, runtime in list(self._runtimes.items()):
            if not runtime.busy and now - runtime.last_used >= self.idle_s:
                log.info("closing idle agent %s (%s)", key[0], key[1])
                del self._runtimes[key]
                self._spelled = {k: v for k, v in self._spelled.items() if v[1] is not runtime}
                self._closing.add(runtime)  # if the pool closes meanwhile, it finishes this stop
                try:
                    await runtime.close()
                finally:
                    self._closing.discard(runtime)
                reaped += 1
        return reaped

    async def close_idle_sessions(self, now: float | None = None) -> int:
        """Let go of the sessions idle longer than ``idle_s`` in every live runtime (see
        ``AcpRuntime.close_idle_sessions``); returns how many."""
        closed = 0
        for runtime in list(self._runtimes.values()):
            closed += await runtime.close_idle_sessions(self.idle_s, now)
        return closed

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(max(self.idle_s / 4, 0.05))
            await self.reap()
            await self.close_idle_sessions()

    async def close(self) -> None:
        """Stop every agent process (stdin EOF, SIGTERM, SIGKILL) and the reaper."""
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        runtimes, self._runtimes = [*self._runtimes.values(), *self._closing], {}
        self._spelled.clear()
        await asyncio.gather(*(rt.close() for rt in runtimes), return_exceptions=True)

    async def __aenter__(self) -> RuntimePool:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
