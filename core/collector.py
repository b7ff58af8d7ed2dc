"""CPython's cyclic garbage collector, set for a relay serving many conversations at once.

By default a young collection runs after every 700 new container objects, an older one after ten of
those, and a full one (walking every object the process holds) after ten older ones. A burst of
conversations allocates at that pace for seconds (tasks, coroutines, requests, parsed answers) while
it holds more objects with every conversation, so full collections came every few hundred
milliseconds and each walked more: a Discord relay in a burst of 1,000 conversations spent 2.0 s of
its 4.5 s of CPU collecting (timed with ``gc.callbacks``; ``bench/bench_burst.py --surface discord
--sizes 1000``), and its first words came after the naive bot's. With a young collection after
10,000 new objects and an older one after 20 of those, it spent 0.4 s, and CPU per conversation fell
from 4.5 ms to 2.7 ms.

What this costs: unreachable cycles wait longer to be freed (at most a young generation of 10,000
objects, a few MiB); a full collection still runs once the objects that survived older ones grew by a
quarter (CPython's own rule), so the heap does not grow without bound.
"""

from __future__ import annotations

import gc

__all__ = ["OLDER_AFTER", "YOUNG_AFTER", "tune_collector"]

#: New container objects (allocations minus frees) before a young collection (CPython: 700).
YOUNG_AFTER = 10_000
#: Young collections before an older one (CPython: 10); full ones keep CPython's 10 older ones.
OLDER_AFTER = 20


def tune_collector() -> None:
    """Collect less often for the rest of the process (``acp-relay run`` calls it once, at start)."""
    gc.set_threshold(YOUNG_AFTER, OLDER_AFTER, gc.get_threshold()[2])
