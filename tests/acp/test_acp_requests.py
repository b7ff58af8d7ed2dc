"""Per-request budgets and agent->client requests we do not serve."""

from __future__ import annotations

import asyncio
import json

import pytest

from core.acp.connection import JsonRpcConnection, RpcError
from core.acp.session_handle import AcpRequestTimeout, AcpRuntimeError
from core.failures import classify


async def test_load_budget_restarts_while_frames_keep_coming(start, agent) -> None:
    # 6 replayed frames 0.2 s apart: 1.2 s in all, longer than the 0.8 s budget, no gap near it.
    rt = await start(agent("--load-delay", "0.2", "--load-replay", "6"), request_timeout_s=0.8)
    first = await rt.new_session()
    loaded = await rt.load_session(first.session_id)
    assert loaded.replayed == 6
    assert not loaded.loading
    assert rt.sessions[first.session_id] is loaded


async def test_one_gap_longer_than_the_budget_times_out(start, agent) -> None:
    rt = await start(agent("--load-delay", "1.0", "--load-replay", "2"))
    rt.request_timeout_s = 0.3  # after start: initialize also pays for the interpreter starting
    first = await rt.new_session()
    with pytest.raises(AcpRequestTimeout) as info:
        await rt.load_session(first.session_id)
    exc = info.value
    assert isinstance(exc, AcpRuntimeError)
    assert exc.method == "session/load"
    assert exc.budget_s == 0.3
    # It was live before the reload: a failed reload must not orphan it (it once did).
    assert rt.sessions[first.session_id] is first
    assert classify(exc).kind == "request_timeout"
    assert classify(exc).transient is True
    # The runtime survives a missed budget: the late answer is dropped, other requests still work.
    assert rt.alive
    again = await rt.new_session()
    assert (await again.prompt("text fine")).text == "fine"


async def test_each_request_has_its_own_budget(start, agent) -> None:
    """A prompt turn has no request budget: it outlives request_timeout_s while the agent works."""
    rt = await start(agent())
    rt.request_timeout_s = 0.3  # after start: initialize also pays for the interpreter starting
    session = await rt.new_session()
    stats = await session.prompt("sleep 0.6\ntext late but fine")
    assert stats.text == "late but fine"


async def test_unknown_agent_request_is_answered_method_not_found(start, agent, recorder) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    stats = await session.prompt('request fs/read_text_file {"sessionId": "x", "path": "/etc/hostname"}')
    assert stats.text == "response:-32601"
    answer = await recorder.wait_frame(lambda f: "error" in f)
    assert answer["error"]["code"] == -32601


async def test_agent_permission_request_for_unknown_session_is_cancelled(start, agent, recorder) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    stats = await session.prompt(
        'request session/request_permission {"sessionId": "not-ours", "toolCall": {"toolCallId": "t"}, '
        '"options": []}')
    assert stats.text == 'response:{"outcome":{"outcome":"cancelled"}}'


# -- agent->client requests at the connection level ---------------------------------------------


class _CaptureWriter:
    def __init__(self) -> None:
        self.frames: list[dict] = []

    def write(self, data: bytes) -> None:
        self.frames.extend(json.loads(line) for line in data.splitlines() if line.strip())

    async def drain(self) -> None:
        pass


async def _answer_one(handler) -> dict:
    reader = asyncio.StreamReader()
    writer = _CaptureWriter()
    conn = JsonRpcConnection(reader, writer, on_notification=lambda m, p: None, on_request=handler)
    reader.feed_data(b'{"jsonrpc":"2.0","id":"r-1","method":"x/y","params":{}}\n')
    reader.feed_eof()
    await conn.run()
    async with asyncio.timeout(5):
        while not writer.frames:
            await asyncio.sleep(0)
    return writer.frames[0]


async def test_request_handler_error_becomes_the_error_reply() -> None:
    async def handler(method: str, params: object) -> object:
        raise RpcError(-32602, "Invalid params", {"why": "test"})

    assert await _answer_one(handler) == {
        "jsonrpc": "2.0", "id": "r-1", "error": {"code": -32602, "message": "Invalid params", "data": {"why": "test"}}}


async def test_request_handler_crash_still_answers() -> None:
    """A handler bug must not leave the agent waiting forever for its answer."""

    async def handler(method: str, params: object) -> object:
        raise ValueError("bug in a handler")

    frame = await _answer_one(handler)
    assert frame["id"] == "r-1"
    assert frame["error"]["code"] == -32603
