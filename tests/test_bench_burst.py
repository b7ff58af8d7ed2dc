"""The burst benchmark's own bookkeeping (``bench.burst``): when an answer counts as shown and as whole,
its profile reader, and the lean bench agent (as a real child process). The figures themselves are
never asserted (``make bench`` prints them)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bench.burst.bench_agent import command
from bench.burst.phases import SIDES, Options, burst
from bench.burst.platform import BEGIN, END, FOOTER, script
from bench.burst.procs import py_spy_arguments
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
    assert "40 samples (at 100 a second: about 0.4 s on CPU" in profile.lines(5)[0]
    assert "40 samples (at 1000 a second: about 0.04 s on CPU" in Profile(raw, 1000).lines(5)[0]


def test_py_spy_samples_above_its_own_rate_without_pausing_the_relay(tmp_path: Path) -> None:
    out = tmp_path / "p.txt"
    assert py_spy_arguments(7, out) == ["record", "--pid", "7", "--format", "raw", "--function", "--rate", "100",
                                        "-o", str(out)]
    fast = py_spy_arguments(7, out, 1000)
    assert fast[fast.index("--rate") + 1] == "1000" and "--nonblocking" in fast


@pytest.mark.parametrize(("surface", "agent"), [*((s, "scripted") for s in sorted(SIDES)), ("slack", "bench")])
async def test_the_burst_harness_measures_the_relay_and_the_naive_bot_on_each_surface(surface: str, agent: str,
                                                                                     tmp_path: Path) -> None:
    """Two people at once, against the relay process and the naive bot: both answer every conversation
    and the harness sees it (so a change in the relay, its config or a fake that breaks the benchmark
    fails here, not in the middle of a long ``make bench``); with the lean bench agent on one surface."""
    opts = Options(tmp_path, chunks=2, seconds=0.1, deadline_s=60.0, agent=agent)
    for kind in ("relay", "naive"):
        run = await burst(surface, kind, 2, opts)
        assert (run.bot, run.size, run.missing, len(run.first)) == (kind, 2, 0, 2)
        assert all(0 < t < 60 for t in run.first)
        assert run.cpu_s >= 0 and run.calls  # (NaN if the bot had exited; /proc counts in 10 ms ticks)
        assert 0 <= run.first_cpu_s <= run.cpu_s  # read as the last first words showed, before the rest
    config = json.loads((tmp_path / f"{surface}-relay-2" / "config.json").read_text(encoding="utf-8"))
    agent_spec = config["agents"]["fake"]
    assert [agent_spec["command"], *agent_spec["args"]] == command(agent)


class _Peer:
    """The bench agent as a real child process, spoken to over its pipes one JSON-RPC line at a time."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.ids = itertools.count(1)

    def send(self, obj: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(obj if isinstance(obj, bytes) else json.dumps(obj).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        req_id = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params or {}})
        return req_id

    async def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        async with asyncio.timeout(10):
            line = await self.proc.stdout.readline()
        assert line, "the agent closed its stdout"
        frame: dict[str, Any] = json.loads(line)
        return frame

    async def until_answer(self, req_id: int, seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Frames up to the answer to ``req_id`` (those before it go to ``seen``)."""
        while (frame := await self.read()).get("id") != req_id or "method" in frame:
            if seen is not None:
                seen.append(frame)
        return frame

    async def session(self) -> str:
        answer = await self.until_answer(self.request("session/new", {"cwd": "/", "mcpServers": []}))
        sid: str = answer["result"]["sessionId"]
        return sid

    def prompt(self, sid: str, text: str) -> int:
        return self.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})


def _chunks(frames: list[dict[str, Any]], sid: str) -> list[str]:
    return [f["params"]["update"]["content"]["text"] for f in frames
            if f.get("method") == "session/update" and f["params"]["sessionId"] == sid
            and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]


@pytest.fixture
async def bench_agent() -> AsyncIterator[_Peer]:
    program, *args = command("bench")
    proc = await asyncio.create_subprocess_exec(program, *args, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE)
    peer = _Peer(proc)
    try:
        yield peer
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            async with asyncio.timeout(10):
                await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


async def test_the_bench_agent_initializes_like_the_scripted_agent_with_close(bench_agent: _Peer) -> None:
    answer = await bench_agent.until_answer(bench_agent.request("initialize", {"protocolVersion": 1}))
    result = answer["result"]
    assert result["protocolVersion"] == 1
    assert result["agentCapabilities"]["sessionCapabilities"] == {"close": {}}
    assert result["agentCapabilities"]["loadSession"] is True
    first, second = await bench_agent.session(), await bench_agent.session()
    assert first != second
    closed = await bench_agent.until_answer(bench_agent.request("session/close", {"sessionId": first}))
    assert closed["result"] == {}
    refused = await bench_agent.until_answer(bench_agent.prompt(first, "hello"))
    assert refused["error"]["code"] == -32002


async def test_a_bench_agent_prompt_streams_its_script_in_order_then_ends_the_turn(bench_agent: _Peer) -> None:
    sid = await bench_agent.session()
    seen: list[dict[str, Any]] = []
    answer = await bench_agent.until_answer(bench_agent.prompt(sid, "text a b\nsleep 0.01\ntext c"), seen)
    assert _chunks(seen, sid) == ["a b", "c"]
    assert answer["result"] == {"stopReason": "end_turn"}
    seen.clear()
    answer = await bench_agent.until_answer(bench_agent.prompt(sid, "hello there"), seen)
    assert _chunks(seen, sid) == ["echo: hello there"] and answer["result"] == {"stopReason": "end_turn"}


async def test_the_bench_agent_runs_prompts_of_two_sessions_at_once(bench_agent: _Peer) -> None:
    slow, quick = await bench_agent.session(), await bench_agent.session()
    slow_id = bench_agent.prompt(slow, "text first\nsleep 2\ntext late")
    quick_id = bench_agent.prompt(quick, "text quick")
    seen: list[dict[str, Any]] = []
    answer = await bench_agent.until_answer(quick_id, seen)
    assert answer["result"] == {"stopReason": "end_turn"}
    assert _chunks(seen, quick) == ["quick"] and "late" not in _chunks(seen, slow)
    bench_agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": slow}})
    assert (await bench_agent.until_answer(slow_id))["result"] == {"stopReason": "cancelled"}


async def test_session_cancel_ends_the_running_bench_agent_prompt_as_cancelled(bench_agent: _Peer) -> None:
    sid = await bench_agent.session()
    req_id = bench_agent.prompt(sid, "text started\nsleep 30\ntext never")
    seen: list[dict[str, Any]] = []
    while _chunks(seen, sid) != ["started"]:
        seen.append(await bench_agent.read())
    bench_agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    answer = await bench_agent.until_answer(req_id, seen)
    assert answer["result"] == {"stopReason": "cancelled"} and "never" not in _chunks(seen, sid)
    again = await bench_agent.until_answer(bench_agent.prompt(sid, "text again"))
    assert again["result"] == {"stopReason": "end_turn"}


async def test_a_malformed_line_does_not_stop_the_bench_agent_and_unknown_methods_are_32601(
        bench_agent: _Peer) -> None:
    bench_agent.send(b"{not json\n")
    assert (await bench_agent.read()) == {"jsonrpc": "2.0", "id": None,
                                          "error": {"code": -32700, "message": "Parse error"}}
    answer = await bench_agent.until_answer(bench_agent.request("session/fork"))
    assert answer["error"]["code"] == -32601
    assert (await bench_agent.until_answer(bench_agent.request("initialize")))["result"]["protocolVersion"] == 1
