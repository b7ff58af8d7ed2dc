"""The store, the dashboard's transcript and the log keep prompts and answers for days: only their
owner may read them. Files are 0600 (SQLite's -wal and -shm too), the folders the relay creates
0700, and files an older version left readable are tightened when they are opened."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.logs import setup_logging
from core.store import Store
from surfaces.dashboard.transcript import Transcript


@pytest.fixture(autouse=True)
def _usual_umask() -> Iterator[None]:
    """A desktop's umask: without care, files come out 0644 and folders 0755."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_is_private_with_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "state" / "acp-relay" / "relay.db"
    with Store.open(path) as store:
        store.set_offset("test", "k", "v")  # a write: the -wal and -shm files exist now
        files = sorted(p.name for p in path.parent.iterdir())
        assert files == ["relay.db", "relay.db-shm", "relay.db-wal"]
        assert {name: mode(path.parent / name) for name in files} == dict.fromkeys(files, 0o600)
    assert mode(path.parent) == 0o700
    assert mode(path.parent.parent) == 0o700  # every folder the store created


def test_an_existing_readable_store_is_tightened_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "relay.db"
    Store.open(path).close()
    for name in ("relay.db", "relay.db-wal", "relay.db-shm"):
        (tmp_path / name).touch()
        (tmp_path / name).chmod(0o644)  # what an older version left
    with Store.open(path) as store:
        store.set_offset("test", "k", "v")
        assert {p.name: mode(p) for p in tmp_path.iterdir() if p.name.startswith("relay.db")} == {
            "relay.db": 0o600, "relay.db-wal": 0o600, "relay.db-shm": 0o600}


def test_a_folder_the_store_did_not_create_is_left_as_it_is(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    Store.open(shared / "relay.db").close()
    assert mode(shared) == 0o755  # e.g. /tmp, or a project folder: not ours to change
    assert mode(shared / "relay.db") == 0o600


def test_the_dashboard_transcript_is_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "relay-dashboard.db"
    transcript = Transcript.open(path)
    transcript.add("tab1", "user", "a prompt that stays on this machine")
    files = sorted(p.name for p in path.parent.iterdir())
    assert {name: mode(path.parent / name) for name in files} == dict.fromkeys(files, 0o600)
    assert "relay-dashboard.db-wal" in files
    assert mode(path.parent) == 0o700
    transcript.close()
    path.chmod(0o644)
    Transcript.open(path).close()
    assert mode(path) == 0o600


def test_the_log_file_is_private(relay_log: Path) -> None:
    logging.getLogger("acp_relay.test").warning("a line")
    assert "a line" in relay_log.read_text(encoding="utf-8")
    assert mode(relay_log) == 0o600 and mode(relay_log.parent) == 0o700
    relay_log.chmod(0o644)  # what an older version left
    setup_logging(logging.WARNING)
    assert mode(relay_log) == 0o600
