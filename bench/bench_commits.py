"""What the SQLite commits on the relay's path to a first text cost the calling thread (the event loop):
the dashboard transcript's write of a person's message (``post_many``, what ``post_user`` writes) and
the store's ``record_inbound``, each call timed, in a stream of conversations that each also write what
a one-chunk answer writes (the agent's message, its edits, its turn's marks; the journal's completion).
The calls' tail is where checkpoints show: a commit that runs one waits for its fsyncs
(``core.wal_checkpoints``).

Run: ``python -m bench.bench_commits [conversations]``. Figures, not assertions.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from core.store import Store
from surfaces.dashboard.transcript import Entry, Transcript


def _figures(name: str, times: list[float]) -> str:
    cuts = statistics.quantiles(times, n=1000)
    us = [x * 1e6 for x in (statistics.fmean(times), cuts[499], cuts[989], cuts[998], max(times))]
    return (f"{name:<16} mean {us[0]:5.0f} us | p50 {us[1]:5.0f} | p99 {us[2]:6.0f} | p99.9 {us[3]:6.0f}"
            f" | max {us[4]:6.0f}")


def _timed(call: Callable[[], object], into: list[float]) -> None:
    start = time.perf_counter()
    call()
    into.append(time.perf_counter() - start)


def transcript(folder: Path, count: int) -> list[float]:
    """The person's message of ``count`` new tabs, one at a time (``max_tabs`` 100, as configured by default).

    ``post_user`` itself is a coroutine written with the others of its round of the loop: timed here is
    its write alone, a round of one (calling it without awaiting timed making the coroutine, no write).
    """
    transcript = Transcript.open(folder / "relay-dashboard.db", max_tabs=100)
    times: list[float] = []
    for i in range(count):
        tab, asked = f"tab{i}", Entry(f"u-m{i}", "user", "please summarise the README in three sentences")
        _timed(lambda: transcript.post_many([(tab, asked)]), times)  # noqa: B023
        transcript.answering(tab, True)
        entry = transcript.add(tab, "agent", "The README")
        assert entry is not None
        for words in ("The README says", "The README says what the relay does", "The README says it all."):
            transcript.update(tab, entry.id, words)
        transcript.answering(tab, False)
    transcript.close()
    return times


def store(folder: Path, count: int) -> list[float]:
    """``record_inbound`` of ``count`` messages, each completed after."""
    times: list[float] = []
    with Store.open(folder / "relay.db") as opened:
        for i in range(count):
            key = f"dashboard:tab{i}"
            _timed(lambda: opened.record_inbound("dashboard", str(i), key, {"text": "please summarise"}),  # noqa: B023
                   times)
            opened.complete_inbound("dashboard", str(i))
    return times


def main() -> None:
    """Print each call's time distribution."""
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with tempfile.TemporaryDirectory(prefix="bench-commits-") as tmp:
        print(f"{count:,} conversations, in {tmp}")
        print(_figures("post_many", transcript(Path(tmp), count)))
        print(_figures("record_inbound", store(Path(tmp), count)))


if __name__ == "__main__":
    main()
