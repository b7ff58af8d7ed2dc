"""Waking another relay: ``NOTIFY`` sent within the writing transaction, ``LISTEN`` on its own connection.

A relay that journals a message for a conversation another relay owns notifies the owner in the
same transaction: the notification leaves only if the journal entry commits, and the owner, woken,
finds the row there. On PostgreSQL every relay listening on the channel hears it; on SQLite the
listeners of the same process do (a SQLite store has no other relay). A listener that loses its
connection gets a transient ``StoreError``: listen again, then look in the tables for what was
missed, since notifications sent in between are not kept.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager

from core.store.notes import Note
from core.store.store import Store

__all__ = ["MAX_PAYLOAD_BYTES", "Notifier"]

#: PostgreSQL refuses a payload of 8000 bytes or more.
MAX_PAYLOAD_BYTES = 7999
# A PostgreSQL identifier as written without quotes (at most 63 bytes): one spelling on both backends.
_CHANNEL = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class Notifier:
    """Notifications over ``store``'s database."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def notify(self, channel: str, payload: str = "") -> None:
        """Send ``payload`` to ``channel``'s listeners when the transaction open in this thread commits
        (``store.transaction()``; at once without one); dropped if it rolls back. ``ValueError`` for a
        channel that is not a lower-case identifier or a payload of 8000 bytes or more."""
        _check(channel)
        if (size := len(payload.encode())) > MAX_PAYLOAD_BYTES:
            raise ValueError(f"a notification's payload must be under 8000 bytes (this one has {size})")
        self._store.backend.notify(channel, payload)

    def listen(self, *channels: str) -> AbstractAsyncContextManager[AsyncIterator[Note]]:
        """``async with notifier.listen("inbound") as notes: async for note in notes: ...``: every note
        sent on ``channels`` from the moment the block is entered until it ends."""
        for channel in channels:
            _check(channel)
        return self._store.backend.listen(channels)


def _check(channel: str) -> None:
    if not _CHANNEL.fullmatch(channel):
        raise ValueError(f"a channel is a lower-case identifier of at most 63 characters, not {channel!r}")
