"""Log refused requests (a wrong webhook secret, a bad signature, no dashboard login) once per source
per minute, with how many came since: a flood of forged posts must not grow the log without bound.

The first refusal from a source is logged at once; later ones within the window are only counted,
and the first one after the window says how many there were. The sources remembered are bounded
(the least recently logged is forgotten first), so many addresses cost no more memory than a few.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["RefusalLog"]


class RefusalLog:
    """``refused(source)`` for each refused request; ``what`` says what was refused, in words."""

    def __init__(self, logger: logging.Logger, what: str, *, level: int = logging.WARNING, window_s: float = 60.0,
                 max_sources: int = 1024, clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._what = what
        self._level = level
        self._window_s = window_s
        self._max_sources = max_sources
        self._clock = clock
        self._sources: OrderedDict[str | None, list[float]] = OrderedDict()  # source -> [logged at, since]

    def __len__(self) -> int:
        """How many sources are remembered."""
        return len(self._sources)

    def refused(self, source: str | None) -> None:
        """Count one refused request from ``source`` (an address; None when unknown), logging if due."""
        now = self._clock()
        seen = self._sources.get(source)
        if seen is not None and now - seen[0] < self._window_s:
            seen[1] += 1
            return
        where = source or "an unknown address"
        if seen is not None and seen[1]:
            self._log.log(self._level, "refused %s from %s (and %d more since the last such line)", self._what,
                          where, int(seen[1]))
        else:
            self._log.log(self._level, "refused %s from %s", self._what, where)
        self._sources[source] = [now, 0]
        self._sources.move_to_end(source)
        while len(self._sources) > self._max_sources:
            self._sources.popitem(last=False)
