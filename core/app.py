"""``acp-relay run``: the store, the engine and every enabled surface, in ``core.lifecycle``'s order.

Surfaces are found in the registry (``core.loading``: the entry points ``acp_relay.surfaces``), so
the core never imports one. The relay watches every surface's ``fatal`` while it runs; a surface
that cannot run with this config, at start or later, ends the run with exit code 2.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from core.agents import choose_agent, gate_problems
from core.config import RelayConfig
from core.lifecycle import Lifecycle, SurfaceFailed
from core.redact import mask_args, redact
from core.store import Store, StoreError

__all__ = ["run_relay"]


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
    if not config.surfaces.enabled():
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
    relay = Lifecycle(config, store)
    try:
        try:
            await relay.launch_enabled()
        except SurfaceFailed as exc:
            _say(str(exc))
            return 2
        await relay.start()
        failed = await relay.until_stopped(stop)
        if failed is not None:
            _say(f"{failed[0]}: {failed[1]}")
            return 2
        _say("shutting down")
    finally:
        await relay.close()
    _say("stopped cleanly")
    return 0
