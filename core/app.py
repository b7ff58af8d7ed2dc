"""``acp-relay run``: the store, the engine and every enabled surface, in ``core.lifecycle``'s order.

Surfaces are found in the registry (``core.loading``: the entry points ``acp_relay.surfaces``), so
the core never imports one. The relay watches every surface's ``fatal`` while it runs; a surface
that cannot run with this config, at start or later, ends the run with exit code 2, and so does a
store that cannot be used as configured (one not reachable yet is tried again).
"""

from __future__ import annotations

import asyncio
import signal
import sys

from core.agents import choose_agent, gate_problems
from core.collector import settle
from core.config import RelayConfig
from core.descriptors import AcceptErrors, raise_open_files_limit
from core.lifecycle import Lifecycle, SurfaceFailed
from core.redact import mask_args, redact
from core.store import Store, StoreError, open_store

__all__ = ["run_relay"]

#: The waits between tries to open a store that could not be reached, growing to the last.
OPEN_DELAYS_S = (1.0, 2.0, 5.0, 10.0, 30.0)


def _say(text: str) -> None:
    print(f"acp-relay: {text}", file=sys.stderr, flush=True)


async def run_relay(config: RelayConfig, *, stop: asyncio.Event | None = None) -> int:
    """Run until SIGINT/SIGTERM (or ``stop``), then shut down cleanly: exit code 0.

    A surface that cannot run with this config (at start or later), or a store that cannot be used as
    configured, ends the run with exit code 2; a store not reachable yet is tried again until stopped.
    """
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    raise_open_files_limit()  # a burst of tabs or calls in flight needs more than the usual soft 1,024
    # Kept for the loop's life: asyncio's retries of refused accepts still fire while it shuts down.
    loop.set_exception_handler(AcceptErrors())
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
    store = await _open_store(config, stop)
    if not isinstance(store, Store):
        return store
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
        settle()  # what the started relay holds stays out of later collections (core/collector.py)
        failed = await relay.until_stopped(stop)
        if failed is not None:
            _say(f"{failed[0]}: {failed[1]}")
            return 2
        _say("shutting down")
    finally:
        await relay.close()
    _say("stopped cleanly")
    return 0


async def _open_store(config: RelayConfig, stop: asyncio.Event) -> Store | int:
    """The configured store, or the exit code: 2 when it cannot be used as configured (a bad URL, a
    refused password, an unwritable file), 0 when stopped first. A network fault (the database not
    reachable yet, restarting) is said and tried again, waiting longer each time, until stopped."""
    attempt = 0
    while True:
        try:
            # In a thread: connecting may wait (connect_timeout), and Ctrl-C must still be heard.
            return await asyncio.to_thread(open_store, config.store)
        except StoreError as exc:
            if not exc.transient:
                _say(str(exc))
                return 2
            delay = OPEN_DELAYS_S[min(attempt, len(OPEN_DELAYS_S) - 1)]
            _say(f"{exc}; trying again in {delay:g} s")
        attempt += 1
        try:
            await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            continue
        _say("stopped before the store could be opened")
        return 0
