"""The relay's state, in SQLite (the default: one file) or PostgreSQL (several relays share it).

One synchronous interface, :class:`Store`, over two backends; the SQL is written once
(``dialect``), the schema is versioned by one table on both (``schema``), and the leases that let
relays share the work (``leases``) and the notifications that wake them (``notify``) sit beside it.
``open_store(config.store)`` opens the one the config names.
"""

from __future__ import annotations

from core.store.leases import Lease, LeaseHolder, LeaseLost
from core.store.notes import Note
from core.store.notify import Notifier
from core.store.opening import database_url, open_store
from core.store.records import (
    HELD_RETRY_S,
    ConversationRecord,
    InboundRecord,
    OutboundRecord,
    ReplyMessageRecord,
    StoreError,
    disk_full,
    held_prose,
)
from core.store.schema import MIGRATIONS, SCHEMA_VERSION
from core.store.store import Store

__all__ = [
    "HELD_RETRY_S",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "ConversationRecord",
    "InboundRecord",
    "Lease",
    "LeaseHolder",
    "LeaseLost",
    "Note",
    "Notifier",
    "OutboundRecord",
    "ReplyMessageRecord",
    "Store",
    "StoreError",
    "database_url",
    "disk_full",
    "held_prose",
    "open_store",
]
