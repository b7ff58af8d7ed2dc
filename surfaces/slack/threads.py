"""The threads the app is part of, and each person's latest one per channel, kept in the surface's
state (``Host.state``: the relay's store).

A reply in a channel thread reaches the agent without a mention only in a thread the app is part
of; after a restart the relay must still know which those are, so they are stored. ``/compact`` in
a channel applies to the person's latest conversation there (a slash command cannot be sent in a
thread). A thread nobody wrote in for ``KEEP_S`` is forgotten (``prune``, at start): a reply there
needs a mention again, and the state does not grow with every thread ever answered.
"""

from __future__ import annotations

from collections import OrderedDict

from core.surface_api import SurfaceState
from surfaces.slack.keys import Thread

__all__ = ["KEEP_S", "Threads"]

#: How long a thread (and a person's latest thread) is remembered after its last message.
KEEP_S = 90 * 24 * 3600.0
_CACHED = 10_000  # thread keys remembered in memory (the store has them all)
_JOINED, _LATEST = "thread:", "latest:"


class Threads:
    """Joined threads and latest threads, in memory and in ``state``."""

    def __init__(self, state: SurfaceState) -> None:
        self._state = state
        self._joined: OrderedDict[str, bool] = OrderedDict()

    def prune(self, older_than_s: float = KEEP_S) -> int:
        """Forget the threads (and latest threads) nobody wrote in for ``older_than_s``; returns how many."""
        self._joined.clear()
        return self._state.prune(older_than_s, _JOINED) + self._state.prune(older_than_s, _LATEST)

    def join(self, thread: Thread) -> None:
        """The app is part of ``thread`` from now on (written each time, so an active thread is kept;
        remembered first, so a store that refuses the write loses it only for the next start)."""
        self._remember(thread.key, True)
        self._state.set(f"{_JOINED}{thread.key}", "joined")

    def joined(self, thread: Thread) -> bool:
        """True when the app is part of ``thread`` (its replies need no mention)."""
        if self._joined.get(thread.key):
            return True
        # Not cached when not joined: another relay sharing the store may join it any moment.
        known = self._state.get(f"{_JOINED}{thread.key}") is not None
        if known:
            self._remember(thread.key, True)
        return known

    def _remember(self, key: str, joined: bool) -> None:
        self._joined[key] = joined
        self._joined.move_to_end(key)
        while len(self._joined) > _CACHED:
            self._joined.popitem(last=False)

    def note_latest(self, thread: Thread, user: str) -> None:
        """``user`` just wrote in ``thread``: their latest conversation in its channel."""
        self._state.set(f"{_LATEST}{thread.team}:{thread.channel}:{user}", thread.thread_ts)

    def latest(self, team: str, channel: str, user: str) -> Thread | None:
        """``user``'s latest conversation in ``channel``, if they have one."""
        ts = self._state.get(f"{_LATEST}{team}:{channel}:{user}")
        return Thread(team, channel, ts) if ts else None
