"""CPython's cyclic garbage collector, set for a relay serving many conversations at once.

By default a young collection runs after every 700 new container objects, an older one after ten of
those, and a full one (walking every object the process holds) after ten older ones. A burst of
conversations allocates at that pace for seconds (tasks, coroutines, requests, parsed answers) while
it holds more objects with every conversation, so full collections came every few hundred
milliseconds and each walked more: a Discord relay in a burst of 1,000 conversations spent 2.0 s of
its 4.5 s of CPU collecting (timed with ``gc.callbacks``; ``bench/bench_burst.py --surface discord
--sizes 1000``), and its first words came after the naive bot's. A young collection after 3,000 new
objects (the older ones keep CPython's ratios) cut that to about 1.0 s.

What it costs is memory: unreachable cycles wait longer to be freed. After 10,000 Discord
conversations the relay's RSS grew 39 MiB over idle instead of 31 MiB (10,000 new objects would
have cut the collecting to 0.4 s, for 46 MiB: too close to issue 24's 50 MiB). A full collection still
runs once the objects that survived older ones grew by a quarter (CPython's own rule), so the heap
does not grow without bound.

What the relay holds once it has started (its modules, the platform libraries' classes and clients,
the store, the surfaces) mostly lives as long as it does, yet every full collection walked it again:
the first one after start came in the middle of the first burst and walked it for 52-87 ms, up to a
third of a Discord relay's time before the hundredth first text (``gc.callbacks``, ``--sizes 100``).
``settle`` collects once when the relay has started and freezes what is left (``gc.freeze``): later
collections walk only what was made since. Frozen objects are still freed by reference counting; only
a cycle among them that becomes garbage later is never collected (what was garbage at start was
collected just before).
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_AFTER", "settle", "tune_collector"]

#: New container objects (allocations minus frees) before a young collection (CPython: 700).
YOUNG_AFTER = 3_000


def tune_collector() -> None:
    """Collect less often for the rest of the process (``acp-relay run`` calls it once, at start)."""
    _, older, full = gc.get_threshold()
    gc.set_threshold(YOUNG_AFTER, older, full)


def settle() -> None:
    """Collect once, then keep what the process holds now out of every later collection (``acp-relay
    run`` calls it once it has started)."""
    gc.collect()
    gc.freeze()
