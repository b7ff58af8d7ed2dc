"""The store's schema: ordered migrations in portable SQL, and the version table that records them.

Both backends run the same :data:`MIGRATIONS` (rendered by ``core.store.dialect``) and record each
version reached in ``schema_version``. A SQLite file from before that table kept its version in
``PRAGMA user_version``: it is read once, written into the table, and the file migrates on from
there; SQLite still mirrors the version in ``user_version``, so an older acp-relay refuses a newer
file. Migrating runs in one transaction, under a lock (PostgreSQL: an advisory lock), so relays
starting together migrate once.
"""

from __future__ import annotations

import logging

from core.store.backend import Backend
from core.store.records import StoreError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

_log = logging.getLogger("acp_relay.store")

# Ordered; entry i brings the schema from version i to i + 1. Never change what a shipped entry does.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE conversations (
            key TEXT PRIMARY KEY, agent TEXT NOT NULL, cwd TEXT NOT NULL, session_id TEXT,
            generation INTEGER NOT NULL, model TEXT, updated_at {float} NOT NULL)""",
        """CREATE TABLE inbound (
            seq {id}, surface TEXT NOT NULL, message_id TEXT NOT NULL,
            conversation_key TEXT NOT NULL, payload TEXT NOT NULL, received_at {float} NOT NULL,
            completed_at {float}, UNIQUE (surface, message_id))""",
        "CREATE INDEX inbound_completed ON inbound (completed_at)",
        "CREATE TABLE offsets (surface TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,"
        " PRIMARY KEY (surface, name))",
        """CREATE TABLE outbound (
            id {id}, conversation_key TEXT NOT NULL,
            payload TEXT NOT NULL, created_at {float} NOT NULL)""",
    ),
    # 2: what the agent needs to load a session again (Kiro's ``_kiro.dev/session_file``).
    ("ALTER TABLE conversations ADD COLUMN session_meta TEXT NOT NULL DEFAULT '{}'",),
    # 3: how far an unfinished message got ("tool": a tool may have run, so it is not replayed).
    ("ALTER TABLE inbound ADD COLUMN progress TEXT NOT NULL DEFAULT ''",),
    # 4: the context usage the agent last reported (a conversation evicted from memory keeps it).
    ("ALTER TABLE conversations ADD COLUMN context_pct {float}",),
    # 5: an unfinished answer's platform messages (a restart continues in them), when its reply
    # started, and the side-effecting tools its turn ran (a restart asks before sending it again).
    (
        "ALTER TABLE inbound ADD COLUMN reply_started {float}",
        "ALTER TABLE inbound ADD COLUMN tools TEXT NOT NULL DEFAULT '[]'",
        """CREATE TABLE reply_messages (
            surface TEXT NOT NULL, message_id TEXT NOT NULL, part INTEGER NOT NULL, piece INTEGER NOT NULL,
            platform_id TEXT NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (surface, message_id, part, piece))""",
    ),
    # 6: when a surface last wrote each of its state rows, so rows no longer used can be pruned (rows
    # from before count as written now: nothing is forgotten at the upgrade).
    (
        "ALTER TABLE offsets ADD COLUMN updated_at {float} NOT NULL DEFAULT 0",
        "UPDATE offsets SET updated_at = {now}",
    ),
    # 7: what a person chose for the conversation from the chat (its project, its mode), the session's
    # title, and what each of its sessions has cost (session id -> {amount, currency}).
    (
        "ALTER TABLE conversations ADD COLUMN project TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE conversations ADD COLUMN mode TEXT",
        "ALTER TABLE conversations ADD COLUMN title TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE conversations ADD COLUMN costs TEXT NOT NULL DEFAULT '{}'",
    ),
    # 8: who owns what (a conversation, a platform's poller) while several relays share the database:
    # the owner, the fencing token (grows with every change of owner) and the expiry by the database's
    # clock. A released lease keeps its row, so its token never starts again from 1.
    (
        """CREATE TABLE leases (
            name TEXT PRIMARY KEY, owner TEXT NOT NULL, token {bigint} NOT NULL, expires_at {float} NOT NULL)""",
        "CREATE INDEX leases_expiry ON leases (expires_at)",
    ),
    # 9: a surface's state rows whose names start with a prefix (a dashboard tab's messages) are one range
    # of the primary key on both backends, whatever PostgreSQL's collation (``Store.offsets``).
    ("{bytewise(offsets)}",),
)
SCHEMA_VERSION = len(MIGRATIONS)

_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at {float} NOT NULL)"


def schema_version(backend: Backend) -> int:
    """The version the database's schema is at (0: nothing created yet): the version table's, or
    SQLite's ``user_version`` if that says more (a file from before the table, or one edited by hand)."""
    legacy = backend.legacy_version()
    if not backend.has_table("schema_version"):
        return legacy
    found = backend.execute("SELECT MAX(version) FROM schema_version").rows[0][0]
    return max(int(found or 0), legacy)


def migrate(backend: Backend) -> None:
    """Create or bring the schema to :data:`SCHEMA_VERSION`; a newer one is refused (``StoreError``)."""
    if _checked(backend, schema_version(backend)) == SCHEMA_VERSION:
        return
    with backend.transaction():
        backend.lock_schema()
        # Read again under the lock: another relay may have migrated meanwhile.
        version = _checked(backend, schema_version(backend))
        backend.execute(_VERSION_TABLE)
        if version and not backend.execute("SELECT 1 FROM schema_version").rows:
            _log.info("store %s: schema version %d moves into the version table", backend.location, version)
            backend.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, {now})", (version,))
        for target in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[target - 1]:
                backend.execute(statement)
            backend.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, {now})", (target,))
        backend.schema_migrated(SCHEMA_VERSION)


def _checked(backend: Backend, version: int) -> int:
    if version > SCHEMA_VERSION:
        detail = f"schema version {version} is newer than this acp-relay supports ({SCHEMA_VERSION})"
        raise StoreError(backend.location, detail)
    return version
