"""A SQLite store whose disk is full (SQLITE_FULL, made with ``tests.full_store``): the write fails
with a ``StoreError`` marked ``full``, which a person reads as the disk being full (``store.full``),
not as a failure the relay did not expect. Once there is room again the store writes as before."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.describing import describe
from core.store import Store, StoreError
from core.store.records import (
    STORE_AWAY,
    STORE_AWAY_HELD,
    STORE_FAILED_HELD,
    STORE_FULL,
    STORE_FULL_HELD,
    held_prose,
)
from tests.full_store import LONG_TEXT, fill, make_room
from tests.postgres import PostgresServer


def test_a_full_disk_is_said_as_such_and_the_store_writes_again_once_there_is_room(tmp_path: Path) -> None:
    with Store.open(tmp_path / "relay.db") as store:
        fill(store)
        with pytest.raises(StoreError) as caught:
            store.record_inbound("dashboard", "m1", "dashboard:tab", {"text": LONG_TEXT})
        refused = caught.value
        assert refused.full and not refused.transient and refused.code == "store.full"
        assert "database or disk is full" in str(refused)  # the log's detail
        described = describe(refused)
        assert (described.prose, described.code, described.transient) == (STORE_FULL, "store.full", False)
        make_room(store)
        assert store.record_inbound("dashboard", "m1", "dashboard:tab", {"text": LONG_TEXT})


def test_any_other_store_failure_is_not_called_full(tmp_path: Path) -> None:
    with Store.open(tmp_path / "relay.db") as store, pytest.raises(StoreError) as caught:
        store.backend.execute("SELECT * FROM no_such_table")
    assert not caught.value.full and caught.value.code == "store"
    assert describe(caught.value).code == "store"


def test_a_database_that_did_not_answer_is_said_as_such() -> None:
    """A transient failure (PostgreSQL restarting, a lost connection): the person is told to send it again."""
    away = StoreError("$ACP_RELAY_STORE_URL", "the connection to the database server was lost", transient=True)
    described = describe(away)
    assert (described.prose, described.code, described.transient) == (STORE_AWAY, "store", True)


def test_a_message_the_relay_holds_is_said_held_for_each_kind_of_refusal() -> None:
    """A surface that holds the message and tries again (Discord) promises an answer, never a resend."""
    full = StoreError("relay.db", "database or disk is full", full=True)
    away = StoreError("$ACP_RELAY_STORE_URL", "the connection was lost", transient=True)
    other = StoreError("relay.db", "no such table: inbound")
    assert [held_prose(e) for e in (full, away, other)] == [STORE_FULL_HELD, STORE_AWAY_HELD, STORE_FAILED_HELD]
    assert not [e for e in (full, away, other) if "send" in held_prose(e)], "never asks for the message again"


@pytest.fixture
def small_tablespace(postgres: PostgresServer) -> Iterator[str]:
    """A tablespace on a 1 MiB tmpfs of its own (mounted here: root only), for a database disk that fills."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem for a tablespace needs root")
    folder = tempfile.mkdtemp(prefix="acp-relay-full-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", folder], check=True)
    name = f"tiny_{os.getpid()}"
    try:
        shutil.chown(folder, "postgres")
        postgres.psql(f"CREATE TABLESPACE {name} LOCATION '{folder}'")
        yield name
    finally:
        with contextlib.suppress(RuntimeError):
            postgres.psql(f"DROP SCHEMA IF EXISTS {name}_s CASCADE")
            postgres.psql(f"DROP TABLESPACE IF EXISTS {name}")
        subprocess.run(["umount", "-l", folder], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_full_database_disk_is_said_as_such_too(postgres: PostgresServer, small_tablespace: str) -> None:
    """PostgreSQL's disk_full (SQLSTATE 53100: its tablespace's 1 MiB filled up): the same ``store.full``."""
    from core.store.postgres import PostgresBackend  # psycopg: only where the server runs

    schema = f"{small_tablespace}_s"
    postgres.psql(f"CREATE SCHEMA {schema}")
    url = postgres.url(options=f"-c search_path={schema} -c default_tablespace={small_tablespace}")
    with Store.on(PostgresBackend.connect(url)) as store, pytest.raises(StoreError) as caught:
        for n in range(10_000):  # about 500 fit
            store.record_inbound("dashboard", f"m{n}", "dashboard:tab", {"text": LONG_TEXT})
    refused = caught.value
    assert refused.full and not refused.transient and refused.code == "store.full", refused
    assert "the disk that holds the database is full" in str(refused)
    assert describe(refused).prose == STORE_FULL
