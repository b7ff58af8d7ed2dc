"""The throwaway PostgreSQL of a test run that was killed (no teardown ran) is stopped and removed by
its watchdog (tests/pg_watchdog.py), instead of listening on until someone kills it by hand."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.postgres import server_binaries

ROOT = Path(__file__).resolve().parents[2]

STARTER = """
import sys
from tests.postgres import PostgresServer
server = PostgresServer.start()
print(server.root, flush=True)
sys.stdin.read()  # until killed
"""

pytestmark = pytest.mark.skipif(server_binaries() is None, reason="PostgreSQL is not installed")


def _gone(root: Path, guard_s: float = 60.0) -> bool:
    deadline = time.monotonic() + guard_s  # a hang guard, not a timing claim
    while time.monotonic() < deadline:
        if not root.exists():
            return True
        time.sleep(0.1)
    return False


def _running(pid: int) -> bool:
    """Alive and not a zombie (this machine's init may be slow to reap the daemonized server)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_test_runs_cluster_is_stopped_and_removed() -> None:
    starter = subprocess.Popen([sys.executable, "-c", STARTER], cwd=ROOT, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        root = Path(starter.stdout.readline().strip())
        pid_file = root / "data" / "postmaster.pid"
        assert pid_file.exists(), "the cluster runs"
        postmaster = int(pid_file.read_text().splitlines()[0])
        os.kill(starter.pid, signal.SIGKILL)  # no teardown, no atexit
        starter.wait()
        assert _gone(root), "the watchdog removed the cluster's folder"
        assert not _running(postmaster), "the server stopped"
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
