"""The PostgreSQL backend (psycopg 3, its synchronous API): several relays share one database.

One connection in autocommit mode per relay, opened again on the call after it was lost (a call
that fails meanwhile raises ``StoreError``, transient: its write may or may not have committed; after
a failed reconnection, calls fail at once for a few seconds instead of each waiting for a timeout).
Every wait is bounded, because the event loop waits too: connecting (``connect_timeout``), an
unanswered packet (``tcp_user_timeout``), a silent peer (keepalives), a statement and a row lock
(``statement_timeout``, ``lock_timeout``), and a relay stopped inside a transaction
(``idle_in_transaction_session_timeout``). A URL setting any of these keeps its own value.
``listen`` uses a connection of its own, asynchronous (psycopg's ``AsyncConnection``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from core.store.backend import Backend, Clock, Result
from core.store.dialect import POSTGRESQL
from core.store.notes import Note, NoteQueue
from core.store.pg_errors import FULL, describe_pg
from core.store.records import StoreError

__all__ = ["PostgresBackend", "parse_url"]

_log = logging.getLogger("acp_relay.store")

_DEFAULTS = {"connect_timeout": "5", "tcp_user_timeout": "5000", "keepalives": "1", "keepalives_idle": "10",
             "keepalives_interval": "3", "keepalives_count": "3", "application_name": "acp-relay"}
# Before the URL's own options, so the URL's win (the last -c of a name counts).
_OPTIONS = "-c statement_timeout=5000 -c lock_timeout=5000 -c idle_in_transaction_session_timeout=30000"
#: After a failed reconnection, calls fail at once this long (the loop must not wait connect_timeout each time).
RECONNECT_PAUSE_S = 2.0
_ADVISORY_KEY = 0x61637072  # "acpr": the schema migration's lock


def parse_url(url: str, source: str) -> tuple[str, str, tuple[str, ...]]:
    """``(conninfo, location, secrets)`` for ``url``: the libpq connection string with our bounded
    waits, the database shown without its password, and the text never to quote. ``StoreError`` for
    a URL libpq cannot read (its own message would quote it, password and all)."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise StoreError(f"${source}", f"{source} does not hold a PostgreSQL connection string libpq can read "
                         "(postgresql://user:password@host:port/database)") from exc
    password = str(params.get("password") or "")
    for key, value in _DEFAULTS.items():
        params.setdefault(key, value)
    params["options"] = f"{_OPTIONS} {params.get('options') or ''}".strip()
    host, port = params.get("host") or "localhost", params.get("port") or "5432"
    location = f"postgresql://{params.get('user') or ''}@{host}:{port}/{params.get('dbname') or ''}"
    return make_conninfo("", **params), location, (password, url) if password else (url,)


class PostgresBackend(Backend):
    """One psycopg connection; reconnects on the next call after it was lost."""

    dialect = POSTGRESQL
    kind = "postgresql"

    def __init__(self, conninfo: str, location: str, *, source: str, secrets: tuple[str, ...] = ()) -> None:
        super().__init__(location)
        self._conninfo = conninfo
        self._source = source
        self._secrets = secrets
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._paused_until = 0.0
        self._last_failure: StoreError | None = None

    @classmethod
    def connect(cls, url: str, *, source: str = "the connection string") -> PostgresBackend:
        """Connect to ``url`` now (a failure is a ``StoreError`` at once); ``source`` names where the
        URL came from (the environment variable), for the sentences."""
        conninfo, location, secrets = parse_url(url, source)
        backend = cls(conninfo, location, source=source, secrets=secrets)
        with backend._lock:
            backend._connection()
        return backend

    def _connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        if self._tx is not None:
            raise self._error("the connection to the database server was lost in the middle of a transaction; "
                              "nothing of it was written", transient=True)
        if self._last_failure is not None and time.monotonic() < self._paused_until:
            raise self._last_failure
        try:
            self._conn = psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            self._last_failure = self._translate(exc, connected=False)
            self._paused_until = time.monotonic() + RECONNECT_PAUSE_S
            raise self._last_failure from exc
        if conn is not None:
            _log.warning("store %s: connected to the database server again", self.location)
        self._last_failure = None
        return self._conn

    def _translate(self, exc: psycopg.Error, *, connected: bool) -> StoreError:
        detail, transient = describe_pg(str(exc), exc.sqlstate, connected=connected, source=self._source,
                                        secrets=self._secrets)
        return self._error(detail, transient=transient, full=exc.sqlstate == FULL)

    def _execute(self, statement: str, params: Sequence[Any]) -> Result:
        conn = self._connection()
        try:
            cur = conn.execute(statement.encode(), tuple(params))
            rows = cur.fetchall() if cur.description is not None else []
            return Result(cur.rowcount, rows)
        except psycopg.Error as exc:
            raise self._translate(exc, connected=True) from exc

    def _begin(self) -> None:
        self._execute("BEGIN", ())

    def _commit(self) -> None:
        self._execute("COMMIT", ())

    def _rollback(self) -> None:
        conn = self._conn
        if conn is None or conn.closed:
            return
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:
            _log.warning("store %s: rollback failed", self.location, exc_info=True)

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()

    def _notify(self, note: Note) -> None:
        # pg_notify, not NOTIFY: it takes the channel and payload as parameters. Sent on commit.
        self.execute("SELECT pg_notify(?, ?)", (note.channel, note.payload))

    @asynccontextmanager
    async def listen(self, channels: Sequence[str]) -> AsyncIterator[AsyncIterator[Note]]:
        """LISTEN on ``channels`` on an asynchronous connection of its own, closed when the block ends.
        A lost connection ends the iteration with a transient ``StoreError``: listen again, then look
        for what was missed (notifications sent meanwhile are not kept)."""
        try:
            conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise self._translate(exc, connected=False) from exc
        queue = NoteQueue()
        pump: asyncio.Task[None] | None = None
        try:
            try:
                for channel in channels:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            except psycopg.Error as exc:
                raise self._translate(exc, connected=True) from exc
            pump = asyncio.create_task(self._pump(conn, queue), name="store-listen")
            yield queue
        finally:
            # psycopg's notifies() holds the connection's lock while it waits: the pump is stopped
            # first, or closing the connection (which takes that lock) would wait forever.
            if pump is not None:
                pump.cancel()
                await asyncio.gather(pump, return_exceptions=True)
            await conn.close()

    async def _pump(self, conn: psycopg.AsyncConnection[Any], queue: NoteQueue) -> None:
        try:
            async for notify in conn.notifies():
                queue.put(Note(notify.channel, notify.payload))
        except psycopg.Error as exc:
            queue.put(self._translate(exc, connected=True))
        else:
            queue.put(self._error("the database server closed the listening connection", transient=True))

    def has_table(self, name: str) -> bool:
        """The table exists in the schema the store's tables are created in (``current_schema()``).

        Read from the catalog's rows, not with ``to_regclass``: that may answer from this
        connection's cache, which does not yet know a table another relay created a moment ago."""
        return bool(self.execute("SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
                                 " AND tablename = ?", (name,)).rows)

    def legacy_version(self) -> int:
        """0: PostgreSQL stores always had the version table."""
        return 0

    def lock_schema(self) -> None:
        """An advisory lock held until the migration's transaction ends: relays starting together
        migrate one after the other (the second finds nothing left to do)."""
        self.execute("SELECT pg_advisory_xact_lock(?)", (_ADVISORY_KEY,))

    def schema_migrated(self, version: int) -> None:
        """Nothing more: the version table is the record."""

    def clock(self) -> Clock:
        """The server's ``clock_timestamp()`` against ``time.time()`` at the middle of the round trip."""
        start, wall = time.perf_counter(), time.time()
        server = float(self.execute("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)")
                       .rows[0][0])
        trip = time.perf_counter() - start
        return Clock(server - (wall + trip / 2), trip)
