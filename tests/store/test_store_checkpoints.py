"""The SQLite store's commits never checkpoint the write-ahead log themselves (each few hundred of them
would stall the event loop for the fsyncs): a thread of its own does, and closing the store ends it.
A relay killed mid-run loses no commit: a commit is in the log when it returns, checkpointed or not."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
from pathlib import Path

from core.store import Store
from tests.test_wal_checkpoints import checkpoint_threads
from tests.waiting import until

_WRITER = """
import sys
from core.store import Store
store = Store.open(sys.argv[1])
for i in range(500):
    store.record_inbound("dashboard", str(i), "dashboard:tab", {"text": f"message {i}"})
print("written", flush=True)
sys.stdin.read()  # until killed
"""


async def test_a_thread_checkpoints_the_store_and_closing_ends_it(tmp_path: Path) -> None:
    path = tmp_path / "relay.db"
    before = checkpoint_threads()
    store = Store.open(path)
    assert store.backend.execute("PRAGMA wal_autocheckpoint").rows == [(0,)], "the loop's commits never do"
    assert [t.name for t in checkpoint_threads() - before] == ["wal-checkpoints relay.db"]
    empty = os.path.getsize(path)
    for i in range(1000):
        store.record_inbound("dashboard", str(i), "dashboard:tab", {"text": "hello " * 50})
    await until(lambda: os.path.getsize(path) > empty, "the thread copied the log into the database file")
    store.close()
    store.close()
    assert not checkpoint_threads() - before


def test_a_store_dropped_unclosed_leaves_no_thread(tmp_path: Path) -> None:
    before = checkpoint_threads()
    store = Store.open(tmp_path / "relay.db")
    assert checkpoint_threads() - before
    del store
    gc.collect()
    assert not checkpoint_threads() - before


def test_a_store_in_memory_has_no_checkpoints() -> None:
    before = checkpoint_threads()
    with Store.open(":memory:") as store:
        store.record_inbound("dashboard", "1", "dashboard:tab", {})
        assert not checkpoint_threads() - before


def test_a_killed_relay_loses_no_commit(tmp_path: Path) -> None:
    path = tmp_path / "relay.db"
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], cwd=root, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert child.stdout is not None and child.stdout.readline() == "written\n"
    finally:
        os.kill(child.pid, signal.SIGKILL)  # no close, no checkpoint
        child.wait()
    with Store.open(path) as store:
        assert [r.message_id for r in store.unfinished_inbound()] == [str(i) for i in range(500)]
