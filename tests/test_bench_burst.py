"""The burst benchmark's own bookkeeping (``bench.burst``): when an answer counts as shown and as whole,
and its profile reader. The figures themselves are never asserted (``make bench`` prints them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.burst.phases import SIDES, Options, burst
from bench.burst.platform import BEGIN, END, FOOTER, script
from bench.burst.profile import Profile
from bench.burst.stats import Timeline, pct


def test_first_text_is_the_first_call_showing_the_answer_not_an_earlier_placeholder() -> None:
    timeline = Timeline(BEGIN, (END, FOOTER))
    timeline.expect([0])
    timeline.written(0, at=10.0)
    timeline.shown(0, "…", at=10.5)
    timeline.shown(0, f"{BEGIN} w0", at=11.0)
    timeline.shown(0, f"{BEGIN} w0 w1", at=12.0)
    assert timeline.first_text_s() == [1.0]


async def test_an_answer_is_whole_once_every_mark_showed_even_in_different_calls() -> None:
    timeline = Timeline(BEGIN, (END, FOOTER))
    timeline.expect([0, 1])
    for i in (0, 1):
        timeline.written(i, at=0.0)
    timeline.shown(0, f"{BEGIN} ... {END}", at=1.0)  # a stream's last append: the end, no footer yet
    assert timeline.missing() == 2
    timeline.shown(0, f"{FOOTER} 1.2 s", at=2.0)  # its stop: the footer
    assert timeline.missing() == 1
    assert not await timeline.wait(0.01)
    timeline.shown(1, f"{BEGIN} {END} {FOOTER}", at=3.0)
    assert await timeline.wait(0.01)
    assert timeline.missing() == 0


def test_conversations_not_measured_now_are_ignored() -> None:
    timeline = Timeline(BEGIN, (END,))
    timeline.expect([5])
    timeline.written(4)
    timeline.shown(4, f"{BEGIN} {END}")
    timeline.call("sendMessage")
    assert timeline.first_text_s() == [] and timeline.missing() == 1
    timeline.expect([4])
    assert timeline.calls == {}


def test_the_scripted_answer_begins_and_ends_with_the_marks() -> None:
    text = script(3, 0.3)
    lines = text.splitlines()
    assert lines[0] == f"text {BEGIN}" and lines[-1] == f"text  {END}"
    assert sum(line.startswith("sleep 0.1000") for line in lines) == 3
    assert script(0, 0) == f"text {BEGIN}\ntext  {END}"


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (pct(values, 0.5), pct(values, 0.95), pct(values, 1.0)) == (50.0, 95.0, 100.0)
    assert pct([3.0], 0.95) == 3.0


def test_a_profile_is_read_by_function_with_the_suspects_shares(tmp_path: Path) -> None:
    raw = tmp_path / "p.txt"
    loop = "run (asyncio/runners.py:160);BaseEventLoop._run_once (asyncio/base_events.py:1845)"
    pool = "AsyncConnectionPool._assign_requests_to_connections (httpcore/_async/connection_pool.py:270)"
    raw.write_text(f"{loop};Streamer._sync (core/engine/streamer.py:265);{pool} 30\n"
                   f"{loop};Pacer._forget_idle (core/engine/pacing.py:68) 10\n"
                   "Thread.run (threading.py:971);ThreadedChildWatcher._do_waitpid (asyncio/unix_events.py:1400) 7\n",
                   encoding="utf-8")
    profile = Profile(raw)
    assert (profile.total, profile.blocked) == (40, 7)
    pool_label = "httpcore/_async/connection_pool.py:AsyncConnectionPool._assign_requests_to_connections"
    assert profile.self_by()[pool_label] == 30
    assert profile.self_by("package")["core"] == 10
    assert profile.inclusive()["core/engine/streamer.py:Streamer._sync"] == 30
    assert "asyncio/runners.py:run" not in profile.inclusive()
    assert profile.share("Pacer._forget_idle") == 0.25
    assert any("Pacer._forget_idle 25.0%" in line for line in profile.lines(5))


@pytest.mark.parametrize("surface", sorted(SIDES))
async def test_the_burst_harness_measures_the_relay_and_the_naive_bot_on_each_surface(surface: str,
                                                                                     tmp_path: Path) -> None:
    """Two people at once, against the relay process and the naive bot: both answer every conversation
    and the harness sees it (so a change in the relay, its config or a fake that breaks the benchmark
    fails here, not in the middle of a long ``make bench``)."""
    opts = Options(tmp_path, chunks=2, seconds=0.1, deadline_s=60.0)
    for kind in ("relay", "naive"):
        run = await burst(surface, kind, 2, opts)
        assert (run.bot, run.size, run.missing, len(run.first)) == (kind, 2, 0, 2)
        assert all(0 < t < 60 for t in run.first)
        assert run.cpu_s >= 0 and run.calls  # (NaN if the bot had exited; /proc counts in 10 ms ticks)
