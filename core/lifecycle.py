"""The order a relay's parts start and stop in, in one place: ``acp-relay run``, the tests' harnesses
and the benchmarks all go through a ``Lifecycle``.

Start: the engine (on an open store and a runtime pool), then each surface (``launch``: what it
receives from now on is journaled), then ``start``: the engine replays what a killed relay left and
answers from then on. Stop: the surfaces stop receiving (nothing new starts), the engine closes
(running turns are cancelled and their final state still reaches the open surfaces), the handling
lanes and the surfaces' tasks end, the surfaces close (last launched first), then the agent
processes and the store. A surface that fails to stop or close is logged with its traceback, once,
and the others still take the step.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, Literal

from core.acp.pool import RuntimePool
from core.config import RelayConfig
from core.engine.engine import Engine
from core.engine.host import Hosting
from core.engine.surface import Launched, StartupError
from core.loading import plugin, require_sdk
from core.plugin import Host, SurfaceSettings
from core.store import Store

__all__ = ["LaunchWith", "Lifecycle", "SurfaceFailed", "build_engine"]

log = logging.getLogger("acp_relay.lifecycle")

#: How a harness launches a surface with its own tuning: ``launch(host, settings)`` with extra keywords.
LaunchWith = Callable[[Host, Any], Awaitable[Launched]]


def build_engine(config: RelayConfig, store: Store, **kw: Any) -> Engine:
    """The engine with its runtime pool, configured as ``acp-relay run`` uses it."""
    pool = RuntimePool(request_timeout_s=config.timeouts.request_s, idle_s=config.timeouts.idle_s)
    return Engine(config, store, pool, **kw)


class Lifecycle:
    """One relay: its store, engine, hosts and launched surfaces, started and stopped in order.

    The lifecycle owns the store from the start (``close`` closes it). ``engine_kw`` goes to the
    ``Engine`` (a test's ``sleep``, ``cancel_wait_s``).
    """

    def __init__(self, config: RelayConfig, store: Store, **engine_kw: Any) -> None:
        self.config = config
        self.store = store
        self.engine = build_engine(config, store, **engine_kw)
        self.hosting = Hosting(self.engine)
        self.launched: dict[str, Launched] = {}
        self._receiving = True
        self._closed = False

    def host(self, name: str) -> Host:
        """The host the surface ``name`` is launched with."""
        return self.hosting.host(name)

    async def launch(self, name: str, launch: LaunchWith | None = None, *,
                     settings: SurfaceSettings | None = None) -> Launched:
        """Launch the surface ``name`` with its settings (``launch``: the plugin's own unless given;
        ``settings``: its section of the config unless given). Raises the surface's ``StartupError``,
        or one naming the extra its SDK comes with."""
        if settings is None:
            settings = self.config.surfaces.get(name)
        if launch is None:
            found = plugin(name)
            require_sdk(found)
            launch = found.launch
        running = await launch(self.hosting.host(name), settings)
        self.launched[name] = running
        return running

    async def launch_enabled(self) -> None:
        """Launch every surface the config enables, in the registry's order; ``SurfaceFailed`` names
        the one that would not start (those launched before it are still closed by ``close``)."""
        for name in self.config.surfaces.enabled():
            try:
                await self.launch(name)
            except StartupError as exc:
                raise SurfaceFailed(name, exc) from exc

    async def start(self) -> None:
        """The engine replays what was left unfinished and answers from now on."""
        await self.engine.start()

    async def until_stopped(self, stop: asyncio.Event) -> tuple[str, StartupError] | None:
        """Wait for ``stop``, or for a surface that can never receive again (returned with its reason)."""
        watchers = {asyncio.create_task(s.fatal(), name=f"fatal:{n}"): n for n, s in self.launched.items()}
        stopped = asyncio.create_task(stop.wait(), name="stop-signal")
        try:
            await asyncio.wait({stopped, *watchers}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (stopped, *watchers):
                task.cancel()
            await asyncio.wait({stopped, *watchers})
        for task, name in watchers.items():
            if not task.cancelled() and task.exception() is None:
                return name, task.result()
        return None

    async def stop_receiving(self) -> None:
        """The first step of a shutdown (also on its own: a benchmark goes on without the platform)."""
        if self._receiving:
            self._receiving = False
            for name in self.launched:
                await self._step("stop_receiving", name)

    async def close(self) -> None:
        """Shut everything down in order (see the module docstring); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        async with AsyncExitStack() as stack:  # unwound in reverse: each step runs even if one before fails
            stack.callback(self.store.close)
            stack.push_async_callback(self.engine.pool.close)
            for name in self.launched:
                stack.push_async_callback(self._step, "close", name)
            stack.push_async_callback(self.hosting.close)
            stack.push_async_callback(self.engine.close)
            stack.push_async_callback(self.stop_receiving)

    async def _step(self, step: Literal["stop_receiving", "close"], name: str) -> None:
        """One surface's step: one that raises is logged with its traceback; the shutdown goes on."""
        try:
            await getattr(self.launched[name], step)()
        except Exception:
            log.exception("%s: %s failed while shutting down", name, step.replace("_", " "))


class SurfaceFailed(Exception):
    """The surface ``name`` could not start: ``reason`` is its one sentence for the operator."""

    def __init__(self, name: str, reason: StartupError) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason

