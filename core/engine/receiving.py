"""Keeping a surface receiving: a platform connection that ends is noticed, logged, and replaced.

A surface hands its receive loop (``connect``: runs while connected, returns or raises when the
connection is gone) to a ``Receiver``. Every end is one clear log line and a reconnect after a
capped, growing delay (reset once a connection has lived a while); a ``StartupError`` (an invalid
token, a refused intent) is a configuration fact no reconnect can fix: the receiver stops and
``fatal`` returns it, so ``acp-relay run`` ends with its sentence instead of running deaf.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from core.engine.surface import StartupError
from core.redact import redact

__all__ = ["Receiver", "ReconnectLater"]

log = logging.getLogger("acp_relay.engine.receiving")

Sleep = Callable[[float], Awaitable[None]]


class ReconnectLater(Exception):
    """The platform asked to wait ``retry_after_s`` before the next attempt (a 429 at login)."""

    def __init__(self, retry_after_s: float, message: str = "") -> None:
        super().__init__(message or f"asked to wait {retry_after_s:.0f} s")
        self.retry_after_s = retry_after_s


class Receiver:
    """Runs ``connect`` again and again until stopped, or until it fails for good."""

    def __init__(self, surface: str, connect: Callable[[], Awaitable[None]], *, sleep: Sleep = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic, first_delay_s: float = 1.0,
                 max_delay_s: float = 60.0, healthy_after_s: float = 60.0) -> None:
        self.surface = surface
        self._connect = connect
        self._sleep = sleep
        self._clock = clock
        self._first_delay_s = first_delay_s
        self._max_delay_s = max_delay_s
        self._healthy_after_s = healthy_after_s
        self._task: asyncio.Task[None] | None = None
        self._fatal: asyncio.Future[StartupError] = asyncio.get_running_loop().create_future()
        self.reconnects = 0

    def start(self) -> None:
        """Start receiving, in a task this receiver owns."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"receive:{self.surface}")

    async def stop(self) -> None:
        """Stop receiving and wait until the connection is closed."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])

    async def fatal(self) -> StartupError:
        """Returns only when receiving has failed for good."""
        return await asyncio.shield(self._fatal)

    async def _run(self) -> None:
        delay = self._first_delay_s
        while True:
            began = self._clock()
            try:
                await self._connect()
                why = "the connection ended"
            except StartupError as exc:
                log.error("%s cannot receive: %s", self.surface, exc)
                self._fatal.set_result(exc)
                return
            except Exception as exc:  # whatever ended it, the surface must not stay deaf
                why = redact(f"{type(exc).__name__}: {exc}".rstrip(": "))
                log.debug("%s receive loop ended", self.surface, exc_info=True)
                asked = exc.retry_after_s if isinstance(exc, ReconnectLater) else 0.0
            else:
                asked = 0.0
            if self._clock() - began >= self._healthy_after_s:
                delay = self._first_delay_s
            self.reconnects += 1
            wait = max(delay, asked)  # never sooner than the platform asked
            log.warning("%s stopped receiving (%s); reconnecting in %.0f s", self.surface, why, wait)
            await self._sleep(wait)
            delay = min(delay * 2, self._max_delay_s)
