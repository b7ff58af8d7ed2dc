"""Our NDJSON reader against a misbehaving agent: noise, non-objects, huge lines, stderr floods."""

from __future__ import annotations

import asyncio
import logging

import pytest

from core.acp.connection import DEFAULT_LINE_CAP, JsonRpcConnection
from core.errors import AcpProcessDied

HANG = 15.0


async def test_noise_lines_are_skipped_and_counted(start, agent) -> None:
    rt = await start(agent("--noise"))
    session = await rt.new_session()
    stats = await session.prompt("text hello")
    assert stats.text == "hello"
    reader = rt.conn.stats
    # Start-up junk: "42", "[1,2]" and {"no":"jsonrpc"} are JSON but not JSON-RPC objects.
    assert reader.non_object == 3
    # One "[fake-agent debug] starting up" line, then one debug line before every frame.
    assert reader.non_json == reader.frames + 1
    assert reader.oversized == 0


async def test_nonobject_lines_mid_turn_are_skipped(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    stats = await session.prompt("text before\nnonobject\nraw not json at all\nraw {\"jsonrpc\": \"1.0\"}\ntext after")
    assert stats.text == "beforeafter"
    assert rt.conn.stats.non_object == 3  # 42, [1,2], a jsonrpc 1.0 object
    assert rt.conn.stats.non_json == 1
    assert rt.alive


async def test_20_mib_line_is_drained_and_reported(start, agent) -> None:
    size = 20 * 1024 * 1024
    assert size > DEFAULT_LINE_CAP
    rt = await start(agent())
    session = await rt.new_session()
    stats = await session.prompt(f"text before\nbigline {size}\ntext after")
    assert stats.text == "beforeafter"
    assert rt.conn.stats.oversized == 1
    assert rt.alive
    again = await session.prompt("text next turn works")
    assert again.text == "next turn works"
    assert again.stop_reason == "end_turn"


async def test_line_under_the_cap_is_read(start, agent) -> None:
    """A line of several MiB below the cap is an ordinary frame (an unknown notification here)."""
    rt = await start(agent())
    session = await rt.new_session()
    frames_before = rt.conn.stats.frames
    stats = await session.prompt(f"bigline {3 * 1024 * 1024}\ntext ok")
    assert stats.text == "ok"
    assert rt.conn.stats.oversized == 0
    assert rt.conn.stats.frames >= frames_before + 3  # the big line, the chunk, the response


async def test_small_line_cap_drops_only_the_long_line(start, agent) -> None:
    rt = await start(agent(), line_cap=4096)
    session = await rt.new_session()
    stats = await session.prompt("text a\nbigline 5000\ntext b\nbigline 1000000\ntext c")
    assert stats.text == "abc"
    assert rt.conn.stats.oversized == 2


async def test_stderr_flood_does_not_block_startup(start, agent) -> None:
    flood = 1024 * 1024
    rt = await start(agent("--stderr-flood", str(flood)))
    session = await rt.new_session()
    assert (await session.prompt("text alive")).text == "alive"
    async with asyncio.timeout(HANG):  # the pump may still be a read behind
        while rt.process.stderr.bytes_read < flood:
            await asyncio.sleep(0.01)
    assert rt.process.stderr.bytes_read == flood
    tail = rt.stderr_tail()
    assert "fake-agent stderr flood" in tail
    assert len(tail.splitlines()) == 5
    assert len(rt.process.stderr.lines()) <= 200  # a bounded ring, not 1 MiB of lines


async def test_stderr_lines_reach_the_tail(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    await session.prompt("stderr first line\nstderr second line\ntext done")
    async with asyncio.timeout(HANG):
        while "second line" not in rt.stderr_tail():
            await asyncio.sleep(0.01)
    assert rt.stderr_tail().splitlines()[-2:] == ["first line", "second line"]


# -- the reader alone, over an in-memory stream -------------------------------------------------


class _NullWriter:
    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


async def _read_all(data: bytes, *, feed_size: int, line_cap: int = DEFAULT_LINE_CAP):
    reader = asyncio.StreamReader(limit=2**30)
    seen: list[tuple[str, object]] = []
    conn = JsonRpcConnection(reader, _NullWriter(), on_notification=lambda m, p: seen.append((m, p)),
                             on_request=_no_request, line_cap=line_cap)
    for i in range(0, len(data), feed_size):
        reader.feed_data(data[i:i + feed_size])
    reader.feed_eof()
    await conn.run()
    return conn, seen


async def _no_request(method: str, params: object) -> object:
    raise AssertionError(f"unexpected request {method}")


@pytest.mark.parametrize("feed_size", [1, 7, 4096, 1 << 20])
async def test_reader_splits_lines_at_any_chunk_boundary(feed_size: int) -> None:
    lines = [b'{"jsonrpc":"2.0","method":"n","params":%d}' % i for i in range(50)]
    data = b"\n".join([lines[0], b"junk", b"", b"  ", *lines[1:], b"[1]", b"\r"]) + b"\n" + lines[0]
    conn, seen = await _read_all(data, feed_size=feed_size)
    assert [p for _, p in seen] == [*range(50), 0]  # the last line has no newline: still read at EOF
    assert conn.stats.non_json == 1
    assert conn.stats.non_object == 1


@pytest.mark.parametrize("feed_size", [100, 65536, 1 << 20])
async def test_oversized_line_at_any_boundary_costs_one_count(feed_size: int) -> None:
    big = b'{"jsonrpc":"2.0","method":"big","params":"' + b"a" * 300_000 + b'"}'
    ok = b'{"jsonrpc":"2.0","method":"ok","params":1}'
    conn, seen = await _read_all(b"\n".join([ok, big, ok, big]) + b"\n" + ok + b"\n", feed_size=feed_size,
                                 line_cap=100_000)
    assert [m for m, _ in seen] == ["ok", "ok", "ok"]
    assert conn.stats.oversized == 2


async def test_a_frame_reads_as_json_loads_reads_its_bytes() -> None:
    """Frames are decoded as UTF-8 by the reader itself (not ``json.loads``' look for an encoding): the
    same values, and the same lines skipped, for text that is not ASCII, escapes, bad UTF-8 and UTF-16."""
    import json

    params = ['"é → 日本 🎉"', '"\\ud83c\\udf89 \\u00e9"', '"\\ud800"', '{"a": [1, 2.5, null, true]}', '"x"  ']
    good = [b'{"jsonrpc":"2.0","method":"n","params":%s}' % p.encode() for p in params]
    good.append('{"jsonrpc":"2.0","method":"n","params":1}'.encode("utf-16-le"))  # json.loads reads it too
    bad = [b'{"jsonrpc":"2.0","method":"n","params":"\xff\xfe"}', b"{", b'{"jsonrpc":"2.0"} {}']
    conn, seen = await _read_all(b"\n".join([*good, *bad]) + b"\n", feed_size=1 << 20)
    assert [p for _, p in seen] == [json.loads(line)["params"] for line in good]
    assert conn.stats.non_json == len(bad)
    for line in bad:
        with pytest.raises(ValueError):
            json.loads(line)


async def test_a_reader_that_fails_unexpectedly_is_logged_once_and_every_waiter_hears_the_agent_is_gone(
        start, agent, caplog: pytest.LogCaptureFixture) -> None:
    # Below the reader: the agent's stdout stream itself fails (not EOF, not a frame we can skip).
    rt = await start(agent())
    session = await rt.new_session()
    prompt = asyncio.create_task(session.prompt("text started\nhang"))
    await asyncio.sleep(0.2)  # the turn is under way
    with caplog.at_level(logging.ERROR, logger="acp_relay"):
        rt.process.proc.stdout.set_exception(RuntimeError("the pipe broke in an unheard-of way"))
        async with asyncio.timeout(HANG):
            with pytest.raises(AcpProcessDied):
                await prompt
    failed = [r for r in caplog.records if "reader of agent" in r.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info is not None, "logged once, with its traceback"
    assert not rt.alive
    assert not rt.process.alive, "an agent whose frames can no longer be read is stopped, not left running"
