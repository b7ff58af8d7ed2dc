"""The channels the relay holds conversations in, and the last message it handled in each.

Kept in the surface's state (``Host.state``: ``channel:<id>`` -> JSON, in the relay's store), so a
restarted relay still knows its threads (a thread's later messages need no mention) and can fetch
what was written in them while it was down. Kinds: ``dm`` (a direct message channel), ``thread``
(a thread under an allowed channel, with its ``parent``), ``channel`` (an allowed channel itself: a
mention there opens a thread). Discord ids are snowflakes, so the last id also says when that message was written.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Literal

from core.surface_api import SurfaceState

__all__ = ["DISCORD_EPOCH_MS", "KnownChannels", "Seen", "snowflake_time"]

log = logging.getLogger("acp_relay.discord.channels")

Kind = Literal["dm", "thread", "channel"]
DISCORD_EPOCH_MS = 1_420_070_400_000
_PREFIX = "channel:"


def snowflake_time(snowflake: int) -> float:
    """When a Discord id was made, in Unix seconds."""
    return ((snowflake >> 22) + DISCORD_EPOCH_MS) / 1000.0


@dataclass(frozen=True, slots=True)
class Seen:
    """A known channel: its kind, its parent (threads), and the last message handled in it."""

    kind: Kind
    last: int
    parent: int | None = None


class KnownChannels:
    """The state's view of the channels the Discord surface serves."""

    def __init__(self, state: SurfaceState) -> None:
        self._state = state
        self._known: dict[int, Seen] = {}
        for name, value in state.items(_PREFIX).items():
            if name[len(_PREFIX):].isdigit():
                try:
                    data = json.loads(value)
                    self._known[int(name[len(_PREFIX):])] = Seen(data["kind"], int(data["last"]), data.get("parent"))
                except (ValueError, KeyError, TypeError):
                    log.warning("ignoring an unreadable Discord position %s=%r", name, value)

    def get(self, channel_id: int) -> Seen | None:
        """What is known of ``channel_id``, or None."""
        return self._known.get(channel_id)

    def note(self, channel_id: int, message_id: int, kind: Kind, parent: int | None = None) -> None:
        """``message_id`` in ``channel_id`` was handled (a later id only moves the position forward)."""
        old = self._known.get(channel_id)
        if old is not None and old.last >= message_id and (old.kind, old.parent) == (kind, parent):
            return
        seen = Seen(kind, max(message_id, old.last if old else 0), parent)
        self._known[channel_id] = seen
        self._state.set(f"{_PREFIX}{channel_id}",
                        json.dumps({"kind": seen.kind, "last": seen.last, "parent": seen.parent}))

    def recent(self, within_s: float, limit: int, *, now: float | None = None) -> list[tuple[int, Seen]]:
        """The channels whose last handled message is younger than ``within_s``, newest first."""
        cutoff = (time.time() if now is None else now) - within_s
        fresh = [(cid, s) for cid, s in self._known.items() if snowflake_time(s.last) >= cutoff]
        fresh.sort(key=lambda item: item[1].last, reverse=True)
        return fresh[:limit]
