"""The store's tests run on both backends: ``place`` is a fresh store's location, SQLite (a file in
``tmp_path``) or PostgreSQL (a new schema on the session's throwaway server, ``tests/postgres.py``),
and ``place.open()`` opens it again, as a restarted relay would."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.store import Store
from tests.postgres import PostgresServer


@dataclass(frozen=True)
class Place:
    """Where one test's store lives: ``kind`` "sqlite" (``location`` a path) or "postgresql" (a URL)."""

    kind: str
    location: str
    server: PostgresServer | None = None

    def open(self) -> Store:
        """Open (and migrate) the store there."""
        if self.kind == "sqlite":
            return Store.open(self.location)
        from core.store.postgres import PostgresBackend  # psycopg: only where the server runs

        return Store.on(PostgresBackend.connect(self.location))

    def sql(self, statement: str) -> list[tuple[object, ...]]:
        """Run ``statement`` on the database directly, as another program would; its rows."""
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.location, isolation_level=None)
            try:
                return conn.execute(statement).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.location, autocommit=True) as conn:
            cur = conn.execute(statement.encode())
            return cur.fetchall() if cur.description else []


BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    return place_for(request, tmp_path)


def place_for(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """A fresh store's place on the backend ``request.param`` (for a ``place`` fixture elsewhere too)."""
    if request.param == "sqlite":
        return Place("sqlite", str(tmp_path / "state" / "nested" / "relay.db"))
    server: PostgresServer = request.getfixturevalue("postgres")
    return Place("postgresql", server.schema_url(), server)


@pytest.fixture
def store(place: Place) -> Iterator[Store]:
    with place.open() as s:
        yield s
