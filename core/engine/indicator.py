"""The "agent is working" indicator: shown while a turn runs, refreshed before it expires, always cleared.

Where the platform's indicator lapses by itself and the bot's next message clears it (Telegram,
Discord, Slack: ``typing_refresh_s`` set), the first one waits ``TYPING_AFTER_S``: an answer that
shows by then would clear it at once, so that call (and the one clearing it) is not made, and a
burst of people writing at once does not hold their first words behind a call nobody sees. An
answer still silent by then gets it as before, refreshed while the turn runs.

When the relay itself is the slow part (its own timers fire late: its event loop is saturated, a
burst), that first call waits on until the loop catches up, the answer shows, or the indicator's
first refresh is due: made then, it would only queue ahead of other conversations' first words.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from types import TracebackType

from core.engine.saturation import wait_out
from core.engine.surface import DeliveryError, Surface

__all__ = ["TYPING_AFTER_S", "TypingIndicator"]

#: A platform indicator that lapses by itself is first shown this long after the turn began, unless the
#: answer shows by then (its first words clear the indicator anyway).
TYPING_AFTER_S = 1.0

log = logging.getLogger("acp_relay.engine.indicator")

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


class TypingIndicator:
    """``async with TypingIndicator(surface, key):`` shows it for the block, on every way out.

    Platforms drop the indicator after a few seconds (Telegram about 5, Discord about 10): with
    ``typing_refresh_s`` set, an owned task re-sends it that often until the block ends. A platform
    error here is a nicety lost, never a failed turn.
    """

    def __init__(self, surface: Surface, conversation_key: str, *, origin: object | None = None,
                 sleep: Sleep = asyncio.sleep, answered: Callable[[], bool] | None = None,
                 after_s: float = TYPING_AFTER_S, clock: Clock = time.monotonic) -> None:
        """``answered`` says whether the answer shows yet (None: the indicator never waits for it);
        ``clock`` is the one ``sleep`` runs on (it tells a timer that fired late)."""
        self.surface = surface
        self.conversation_key = conversation_key
        self._origin = origin  # of the message being answered (the surface's own handle)
        self._caps = surface.capabilities_for(conversation_key, origin)
        self._sleep = sleep
        self._clock = clock
        self._answered = answered
        refresh = self._caps.typing_refresh_s
        # Never longer than half the refresh: a lapsing indicator is shown well within its first lapse.
        self._after_s = min(after_s, refresh / 2) if answered is not None and refresh else 0.0
        self._task: asyncio.Task[None] | None = None
        self._shown = False  # an "on" was asked for: the way out clears it

    async def __aenter__(self) -> TypingIndicator:
        # Nothing here awaits: a turn cancelled right at its start still reaches __aexit__ (and "off").
        if self._caps.can_typing:
            self._task = asyncio.create_task(self._show(), name=f"typing:{self.conversation_key}")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            await self.pause()
        finally:  # even when this turn is being cancelled right now (a stop)
            if self._shown:
                self._shown = False
                await self._set(False)

    async def pause(self) -> None:
        """Stop refreshing but leave the indicator shown (while the final answer is delivered)."""
        task, self._task = self._task, None
        if task is not None and not task.done():  # shown and not refreshing: nothing to wait for
            task.cancel()
            if self._shown:  # an "on" may be in flight: it lands before what comes next
                await asyncio.wait([task])
            # Else it is still waiting to show the first: cancelled there, it sends nothing (most
            # turns in a burst end so, and need not wait a round of the loop for it).

    async def _show(self) -> None:
        refresh = self._caps.typing_refresh_s
        if self._after_s and refresh:
            waited = await wait_out(self._sleep, self._clock, self._after_s, refresh, self._answered)
            if self._answered is not None and self._answered():
                await self._sleep(max(0.0, refresh - waited))  # shown by now: its next refresh
        await self._on()
        while refresh:
            await self._sleep(refresh)
            await self._on()

    async def _on(self) -> None:
        self._shown = True
        await self._set(True)

    async def _set(self, active: bool) -> None:
        try:
            await self.surface.typing(self.conversation_key, active, origin=self._origin)
        except DeliveryError as exc:
            log.info("typing indicator failed in %s: %s", self.conversation_key, exc)
        except Exception:  # a surface bug must not cost the person their answer
            log.exception("typing indicator failed in %s", self.conversation_key)
