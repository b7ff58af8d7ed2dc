"""The "agent is working" indicator: shown while a turn runs, refreshed before it expires, always cleared."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType

from core.engine.surface import DeliveryError, Surface

__all__ = ["TypingIndicator"]

log = logging.getLogger("acp_relay.engine.indicator")

Sleep = Callable[[float], Awaitable[None]]


class TypingIndicator:
    """``async with TypingIndicator(surface, key):`` shows it for the block, on every way out.

    Platforms drop the indicator after a few seconds (Telegram about 5, Discord about 10): with
    ``typing_refresh_s`` set, an owned task re-sends it that often until the block ends. A platform
    error here is a nicety lost, never a failed turn.
    """

    def __init__(self, surface: Surface, conversation_key: str, *, origin: object | None = None,
                 sleep: Sleep = asyncio.sleep) -> None:
        self.surface = surface
        self.conversation_key = conversation_key
        self._origin = origin  # of the message being answered (the surface's own handle)
        self._caps = surface.capabilities_for(conversation_key, origin)
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None
        self._paused = False

    async def __aenter__(self) -> TypingIndicator:
        # Nothing here awaits: a turn cancelled right at its start still reaches __aexit__ (and "off").
        if self._caps.can_typing:
            self._task = asyncio.create_task(self._show(), name=f"typing:{self.conversation_key}")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        shown = self._task is not None or self._paused
        self._paused = False
        try:
            await self.pause()
        finally:  # even when this turn is being cancelled right now (a stop)
            if shown:
                await self._set(False)

    async def pause(self) -> None:
        """Stop refreshing but leave the indicator shown (while the final answer is delivered)."""
        task, self._task = self._task, None
        if task is None:
            return
        self._paused = True
        if not task.done():  # shown and not refreshing: nothing to wait for
            task.cancel()
            await asyncio.wait([task])  # an "on" still in flight lands before what comes next

    async def _show(self) -> None:
        await self._set(True)
        refresh = self._caps.typing_refresh_s
        while refresh:
            await self._sleep(refresh)
            await self._set(True)

    async def _set(self, active: bool) -> None:
        try:
            await self.surface.typing(self.conversation_key, active, origin=self._origin)
        except DeliveryError as exc:
            log.info("typing indicator failed in %s: %s", self.conversation_key, exc)
        except Exception:  # a surface bug must not cost the person their answer
            log.exception("typing indicator failed in %s", self.conversation_key)
