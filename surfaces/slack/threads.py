"""The threads the app is part of, and each person's latest one per channel, kept in the relay's store.

A reply in a channel thread reaches the agent without a mention only in a thread the app is part
of; after a restart the relay must still know which those are, so they are stored (the store's
``offsets`` table, under the ``slack`` surface). ``/compact`` in a channel applies to the person's
latest conversation there (a slash command cannot be sent in a thread).
"""

from __future__ import annotations

from collections import OrderedDict

from core.store import Store
from surfaces.slack.keys import Thread

__all__ = ["Threads"]

_SURFACE = "slack"
_CACHED = 10_000  # thread keys remembered in memory (the store has them all)


class Threads:
    """Joined threads and latest threads, in memory and in ``store``."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._joined: OrderedDict[str, bool] = OrderedDict()

    def join(self, thread: Thread) -> None:
        """The app is part of ``thread`` from now on."""
        if not self.joined(thread):
            self._store.set_offset(_SURFACE, f"thread:{thread.key}", "joined")
        self._remember(thread.key, True)

    def joined(self, thread: Thread) -> bool:
        """True when the app is part of ``thread`` (its replies need no mention)."""
        known = self._joined.get(thread.key)
        if known is None:
            known = self._store.get_offset(_SURFACE, f"thread:{thread.key}") is not None
            self._remember(thread.key, known)
        return known

    def _remember(self, key: str, joined: bool) -> None:
        self._joined[key] = joined
        self._joined.move_to_end(key)
        while len(self._joined) > _CACHED:
            self._joined.popitem(last=False)

    def note_latest(self, thread: Thread, user: str) -> None:
        """``user`` just wrote in ``thread``: their latest conversation in its channel."""
        self._store.set_offset(_SURFACE, f"latest:{thread.team}:{thread.channel}:{user}", thread.thread_ts)

    def latest(self, team: str, channel: str, user: str) -> Thread | None:
        """``user``'s latest conversation in ``channel``, if they have one."""
        ts = self._store.get_offset(_SURFACE, f"latest:{team}:{channel}:{user}")
        return Thread(team, channel, ts) if ts else None
