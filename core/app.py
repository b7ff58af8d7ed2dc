"""``acp-relay run``: the store, the runtime pool, the engine and every enabled surface.

Surfaces are loaded by name (``surfaces.<name>.launch``), so the core never imports one: each
surface package exposes ``async def launch(engine, config) -> Launched`` where ``Launched`` has an
``async close()``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import signal
import sys
from contextlib import AsyncExitStack
from typing import Any, Protocol

from core.acp.pool import RuntimePool
from core.agents import choose_agent
from core.config import RelayConfig, mask_args
from core.engine.engine import Engine
from core.engine.surface import StartupError
from core.redact import redact
from core.store import Store, StoreError

__all__ = ["Launched", "build_engine", "run_relay"]

log = logging.getLogger("acp_relay.app")


class Launched(Protocol):
    """A running surface, as ``launch`` returns it."""

    async def close(self) -> None:
        """Stop serving (called after the engine has cancelled its turns)."""
        ...


def build_engine(config: RelayConfig, store: Store, **kw: Any) -> Engine:
    """The engine with its runtime pool, configured as ``acp-relay run`` uses it (tests use it too)."""
    pool = RuntimePool(request_timeout_s=config.timeouts.request_s, idle_s=config.timeouts.idle_s)
    return Engine(config, store, pool, **kw)


def _say(text: str) -> None:
    print(f"acp-relay: {text}", file=sys.stderr, flush=True)


async def run_relay(config: RelayConfig, *, stop: asyncio.Event | None = None) -> int:
    """Run until SIGINT/SIGTERM (or ``stop``), then shut down cleanly: exit code 0."""
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
    try:
        store = Store.open(config.store.path)
    except StoreError as exc:
        _say(str(exc))
        return 1
    name, agent = choose_agent(config)
    _say(redact(f"agent: {name} ({agent.command} {' '.join(mask_args(agent.args))})".rstrip()))
    engine = build_engine(config, store)
    # Unwound in reverse: running turns are cancelled first (their final state still reaches the
    # open surfaces), then the surfaces close, then the agent processes stop, then the store.
    async with AsyncExitStack() as stack:
        stack.callback(store.close)
        stack.push_async_callback(engine.pool.close)
        enabled = [n for n in ("dashboard", "telegram", "discord", "slack") if getattr(config.surfaces, n).enabled]
        if not enabled:
            _say("no surface is enabled in the config; nothing to do")
            return 2
        for surface in enabled:
            module = importlib.import_module(f"surfaces.{surface}")
            if not hasattr(module, "launch"):
                _say(f"surfaces.{surface} is enabled, but this version has no {surface} surface yet")
                return 2
            try:
                launched: Launched = await module.launch(engine, config)
            except StartupError as exc:
                _say(f"{surface}: {exc}")
                return 2
            stack.push_async_callback(launched.close)
        stack.push_async_callback(engine.close)
        await engine.start()
        await stop.wait()
        _say("shutting down")
    _say("stopped cleanly")
    return 0
