"""What each conversation saw (written, first text, done) and the figures made from it.

Timestamps are ``time.monotonic()`` taken by the fake platform as a call arrives (or by the browser
side of the dashboard as an event arrives), so the relay and the naive bot are timed at the same
place, the place a person would look.
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["LoopLag", "Timeline", "pct"]


def pct(values: Iterable[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank; NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class _Conversation:
    written: float | None = None
    handed: float | None = None  # when the platform handed the message to the bot (Telegram's getUpdates)
    first_text: float | None = None
    done: float | None = None
    seen: set[str] = field(default_factory=set)


class Timeline:
    """Per conversation: when the person wrote, when the bot's answer first showed and when it was whole.

    ``begin`` is a mark of the answer's first words; the answer is whole once every mark of ``done``
    was shown (cumulatively: a streamed answer may show its end and its footer in different calls).
    """

    def __init__(self, begin: str, done: Iterable[str]) -> None:
        self.begin = begin
        self.done_marks = frozenset(done)
        self.convs: dict[int, _Conversation] = {}
        self.finished = 0
        self.first_shown = 0  # conversations whose first words showed
        #: The bot's platform calls (the dashboard: events on the tabs' streams) since ``expect``, by method.
        self.calls: Counter[str] = Counter()
        self._all_done = asyncio.Event()
        self._all_first = asyncio.Event()
        self._expected: set[int] = set()

    def expect(self, ids: Iterable[int]) -> None:
        """These conversations are measured now (earlier ones are forgotten)."""
        self.convs = {i: _Conversation() for i in ids}
        self._expected = set(self.convs)
        self.finished = 0
        self.first_shown = 0
        self.calls.clear()
        self._all_done.clear()
        self._all_first.clear()

    def call(self, method: str) -> None:
        """The bot made a platform call (answered or not)."""
        self.calls[method] += 1

    def written(self, i: int, at: float | None = None) -> None:
        conv = self.convs.get(i)
        if conv is not None and conv.written is None:
            conv.written = time.monotonic() if at is None else at

    def handed(self, i: int, at: float | None = None) -> None:
        conv = self.convs.get(i)
        if conv is not None and conv.handed is None:
            conv.handed = time.monotonic() if at is None else at

    def shown(self, i: int, text: str, at: float | None = None) -> None:
        """The bot put ``text`` on the screen in conversation ``i``."""
        conv = self.convs.get(i)
        if conv is None or conv.done is not None or not text:
            return
        now = time.monotonic() if at is None else at
        if conv.first_text is None and self.begin in text:
            conv.first_text = now
            self.first_shown += 1
            if self.first_shown == len(self._expected):
                self._all_first.set()
        conv.seen.update(mark for mark in self.done_marks if mark in text)
        if conv.first_text is not None and conv.seen == self.done_marks:
            conv.done = now
            self.finished += 1
            if self.finished == len(self._expected):
                self._all_done.set()

    async def wait(self, timeout: float) -> bool:
        """True once every expected conversation is done; False if ``timeout`` ran out first."""
        try:
            async with asyncio.timeout(timeout):
                await self._all_done.wait()
        except TimeoutError:
            return False
        return True

    async def all_first(self) -> None:
        """Returns once every expected conversation showed its first words."""
        await self._all_first.wait()

    def first_text_s(self) -> list[float]:
        return [c.first_text - c.written for c in self.convs.values()
                if c.first_text is not None and c.written is not None]

    def inbound_s(self) -> list[float]:
        return [c.handed - c.written for c in self.convs.values() if c.handed is not None and c.written is not None]

    def missing(self) -> int:
        return sum(1 for c in self.convs.values() if c.done is None)


class LoopLag:
    """How late this event loop wakes a 10 ms sleeper (the fake platform's own delay, if it has one), and
    the longest pause of the garbage collector meanwhile."""

    def __init__(self, every_s: float = 0.01) -> None:
        self.every_s = every_s
        self.lags: list[float] = []
        self.gc_max_s = 0.0
        self._gc_started = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            start = time.monotonic()
            await asyncio.sleep(self.every_s)
            self.lags.append(time.monotonic() - start - self.every_s)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.monotonic()
        else:
            self.gc_max_s = max(self.gc_max_s, time.monotonic() - self._gc_started)

    def start(self) -> None:
        self.lags.clear()
        self.gc_max_s = 0.0
        gc.callbacks.append(self._gc)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="bench-loop-lag")

    async def stop(self) -> tuple[float, float]:
        """(p95, max) lateness in seconds since ``start``."""
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        return pct(self.lags, 0.95), max(self.lags, default=math.nan)
