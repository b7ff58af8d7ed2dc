"""``acp-relay run``: the store, the runtime pool, the engine and every enabled surface.

Surfaces are loaded by name (``surfaces.<name>.launch``, see ``core.loading``), so the core never
imports one. Each ``launch(engine, config)`` returns a ``Launched`` (``core.engine.surface``): the
relay watches every surface's ``fatal`` while it runs, and on shutdown stops them receiving before
the engine closes (nothing new starts), closes the engine (running turns are cancelled and their
final state still reaches the open surfaces), then the surfaces, the agent processes and the store.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from contextlib import AsyncExitStack
from typing import Any, Literal

from core.acp.pool import RuntimePool
from core.agents import choose_agent, gate_problems
from core.config import RelayConfig, mask_args
from core.engine.engine import Engine
from core.engine.surface import Launched, StartupError
from core.loading import load_surface
from core.redact import redact
from core.store import Store, StoreError

__all__ = ["SURFACE_NAMES", "build_engine", "run_relay"]

log = logging.getLogger("acp_relay.app")

#: Every surface, in the order they start.
SURFACE_NAMES = ("dashboard", "telegram", "discord", "slack")


def build_engine(config: RelayConfig, store: Store, **kw: Any) -> Engine:
    """The engine with its runtime pool, configured as ``acp-relay run`` uses it (tests use it too)."""
    pool = RuntimePool(request_timeout_s=config.timeouts.request_s, idle_s=config.timeouts.idle_s)
    return Engine(config, store, pool, **kw)


def _say(text: str) -> None:
    print(f"acp-relay: {text}", file=sys.stderr, flush=True)


async def run_relay(config: RelayConfig, *, stop: asyncio.Event | None = None) -> int:
    """Run until SIGINT/SIGTERM (or ``stop``), then shut down cleanly: exit code 0.

    A surface that cannot run with this config (at start or later) ends the run with exit code 2.
    """
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        return await _serve(config, stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _serve(config: RelayConfig, stop: asyncio.Event) -> int:
    enabled = [n for n in SURFACE_NAMES if getattr(config.surfaces, n).enabled]
    if not enabled:
        _say("no surface is enabled in the config; nothing to do")
        return 2
    if problems := gate_problems(config):  # tools that would run unasked: refused before anything starts
        for path, problem in problems:
            _say(f"{path}: {problem}")
        return 2
    try:
        store = Store.open(config.store.path)
    except StoreError as exc:
        _say(str(exc))
        return 1
    name, agent = choose_agent(config)
    _say(redact(f"agent: {name} ({agent.command} {' '.join(mask_args(agent.args))})".rstrip()))
    engine = build_engine(config, store)
    async with AsyncExitStack() as stack:  # unwound in reverse order
        stack.callback(store.close)
        stack.push_async_callback(engine.pool.close)
        launched: dict[str, Launched] = {}
        for surface in enabled:
            try:
                running: Launched = await load_surface(surface).launch(engine, config)
            except StartupError as exc:
                _say(f"{surface}: {exc}")
                return 2
            stack.push_async_callback(_each, "close", {surface: running})
            launched[surface] = running
        stack.push_async_callback(engine.close)
        stack.push_async_callback(_each, "stop_receiving", launched)
        await engine.start()
        failed = await _until_stopped(stop, launched)
        if failed is not None:
            _say(f"{failed[0]}: {failed[1]}")
            return 2
        _say("shutting down")
    _say("stopped cleanly")
    return 0


async def _until_stopped(stop: asyncio.Event, launched: dict[str, Launched]) -> tuple[str, StartupError] | None:
    """Wait for a stop signal, or for a surface that can never receive again (returned)."""
    watchers = {asyncio.create_task(s.fatal(), name=f"fatal:{n}"): n for n, s in launched.items()}
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


async def _each(step: Literal["stop_receiving", "close"], launched: dict[str, Launched]) -> None:
    """One step of the shutdown for every surface: one that raises is logged (with its traceback,
    once) and the others still take the step; the run itself did not fail, so the exit stays 0."""
    for name, surface in launched.items():
        try:
            await getattr(surface, step)()
        except Exception:
            log.exception("%s: %s failed while shutting down", name, step.replace("_", " "))
