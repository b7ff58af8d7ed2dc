"""What the store needs from a database, once per backend: statements, transactions, notifications.

``Store`` writes its SQL once (``core.store.dialect``) and runs it through a ``Backend``: SQLite
(``core.store.sqlite``) or PostgreSQL (``core.store.postgres``). A backend owns one connection and a
re-entrant lock: a statement run while this thread holds a transaction open joins it, so several
store calls can commit together (``Store.transaction``). Every driver failure leaves a backend as a
``StoreError`` in plain words.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from core.store.dialect import Dialect
from core.store.notes import Note
from core.store.records import StoreError

__all__ = ["Backend", "Clock", "Result", "Transaction"]


@dataclass(frozen=True, slots=True)
class Result:
    """What one statement did: rows it changed, rows it returned."""

    rowcount: int
    rows: list[tuple[Any, ...]]


@dataclass(slots=True)
class Transaction:
    """An open write transaction: notifications to send when it commits, leases already checked in it."""

    notes: list[Note] = field(default_factory=list)
    fences: set[tuple[str, str, int]] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Clock:
    """The database server's clock against the relay's, read in one round trip (``doctor``)."""

    #: Server time minus the relay's time at the middle of the round trip, in seconds (0: one clock).
    skew_s: float
    round_trip_s: float


class Backend(ABC):
    """One connection to one database, shared by the event loop and worker threads."""

    dialect: ClassVar[Dialect]
    #: "sqlite" or "postgresql".
    kind: ClassVar[str]

    def __init__(self, location: str, lock: AbstractContextManager[object] | None = None) -> None:
        """``lock``: the re-entrant lock held around each statement and transaction (a new RLock if none)."""
        self.location = location
        self._lock = threading.RLock() if lock is None else lock
        self._tx: Transaction | None = None
        self._closed = False

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        """Run one portable statement (atomic on its own, or part of this thread's open transaction)."""
        with self._lock:
            self._check_open()
            return self._execute(self.dialect.render(sql), params)

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A write transaction for the block (joined if this thread already has one open): committed
        when the block ends, rolled back if it raises."""
        with self._lock:
            if self._tx is not None:
                yield self._tx
                return
            self._check_open()
            self._begin()
            tx = self._tx = Transaction()
            try:
                yield tx
            except BaseException:
                self._tx = None
                self._rollback()
                raise
            self._tx = None
            self._commit()
        self._committed(tx)

    def notify(self, channel: str, payload: str) -> None:
        """Send ``payload`` to ``channel``'s listeners when this thread's transaction commits (at once
        without one)."""
        with self._lock:
            self._check_open()
            self._notify(Note(channel, payload))

    def close(self) -> None:
        """Close the connection; idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(self.location, "the store was closed")

    def _error(self, detail: str, *, transient: bool = False, full: bool = False) -> StoreError:
        return StoreError(self.location, detail, transient=transient, full=full)

    def _committed(self, tx: Transaction) -> None:  # noqa: B027 (a hook: most backends need nothing here)
        """After a commit (the SQLite backend sends the transaction's notifications here)."""

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any]) -> Result: ...

    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _commit(self) -> None: ...

    @abstractmethod
    def _rollback(self) -> None:
        """Roll back; a failure here is swallowed (the error that caused it is the one to raise)."""

    @abstractmethod
    def _close(self) -> None: ...

    @abstractmethod
    def _notify(self, note: Note) -> None: ...

    @abstractmethod
    def listen(self, channels: Sequence[str]) -> AbstractAsyncContextManager[AsyncIterator[Note]]:
        """Listen on ``channels`` while the block runs (PostgreSQL: on a connection of its own)."""

    @abstractmethod
    def has_table(self, name: str) -> bool:
        """The table ``name`` exists."""

    @abstractmethod
    def legacy_version(self) -> int:
        """The schema version a database kept before the version table (SQLite's ``user_version``)."""

    @abstractmethod
    def lock_schema(self) -> None:
        """Inside the migration's transaction: keep other relays from migrating at the same time."""

    @abstractmethod
    def schema_migrated(self, version: int) -> None:
        """Inside the migration's transaction, after it (SQLite mirrors the version in ``user_version``,
        so an acp-relay from before the version table refuses a newer file)."""

    @abstractmethod
    def clock(self) -> Clock:
        """The database server's clock against the relay's."""
