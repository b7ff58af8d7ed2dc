"""The transcript's commits never checkpoint the write-ahead log themselves (each few hundred of them
would stall the event loop for the fsyncs): a thread of its own does, and closing the transcript ends
it (``tests/test_wal_checkpoints.py`` has the rest)."""

from __future__ import annotations

import os
from pathlib import Path

from surfaces.dashboard.transcript import Transcript
from tests.test_wal_checkpoints import checkpoint_threads
from tests.waiting import until


async def test_a_thread_checkpoints_the_transcript_and_closing_ends_it(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    before = checkpoint_threads()
    transcript = Transcript.open(path)
    assert transcript._conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,), "the loop's commits never do"
    assert [t.name for t in checkpoint_threads() - before] == ["wal-checkpoints t.db"]
    empty = os.path.getsize(path)
    for i in range(1000):
        transcript.add(f"tab{i}", "user", "hello " * 50)
    await until(lambda: os.path.getsize(path) > empty, "the thread copied the log into the database file")
    transcript.close()
    transcript.close()
    assert not checkpoint_threads() - before
    reopened = Transcript.open(path)
    assert [e.text for e in reopened.entries("tab999")] == ["hello " * 50]
    reopened.close()

