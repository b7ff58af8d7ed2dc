"""Well-formed JSON-RPC with fields of the wrong type: each costs at most that frame, never the
connection, the runtime, or the turn around it."""

from __future__ import annotations

import asyncio
import json

import pytest

from core.acp.connection import JsonRpcConnection

MALFORMED = [
    {"sessionUpdate": "plan", "entries": None},
    {"sessionUpdate": "plan", "entries": 5},
    {"sessionUpdate": "available_commands_update", "availableCommands": None},
    {"sessionUpdate": "config_option_update", "configOptions": 5},
    {"sessionUpdate": "config_option_update",
     "configOptions": [{"id": "model", "category": "model", "options": None}]},
    {"sessionUpdate": "tool_call", "toolCallId": "t1", "content": "not a list", "status": 7},
    {"sessionUpdate": "agent_message_chunk", "content": None},
]


@pytest.mark.parametrize("update", MALFORMED, ids=lambda u: f"{u['sessionUpdate']}")
async def test_a_malformed_update_does_not_end_the_turn_or_the_runtime(start, agent, update) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    stats = await session.prompt(f"text before\nupdate {json.dumps(update)}\ntext after")
    assert stats.stop_reason == "end_turn"
    assert stats.text == "beforeafter"
    assert rt.alive
    assert (await session.prompt("text still here")).text == "still here"


async def test_malformed_kiro_metering_does_not_end_the_turn(start, agent) -> None:
    rt = await start(agent("--kiro", backend="kiro"))
    session = await rt.new_session()
    meta = json.dumps({"contextUsagePercentage": 12, "meteringUsage": 5})
    stats = await session.prompt(f"kiro_meta {meta}\ntext fine")
    assert (stats.text, stats.context_pct, stats.credits) == ("fine", 12.0, None)
    assert rt.alive


async def test_grouped_model_options_are_read_as_models(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    grouped = {"sessionUpdate": "config_option_update", "configOptions": [{
        "id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "b",
        "options": [{"group": "fast", "name": "Fast", "options": [{"value": "a", "name": "A"}]},
                    {"group": "deep", "name": "Deep", "options": [{"value": "b", "name": "B"}]}]}]}
    await session.prompt(f"update {json.dumps(grouped)}\ntext ok")
    assert session.models == ("a", "b") and session.current_model == "b"


class _Sink:
    def __init__(self) -> None:
        self.frames: bytearray = bytearray()

    def write(self, data: bytes) -> None:
        self.frames += data

    async def drain(self) -> None:
        return None


async def test_a_handler_that_fails_on_one_frame_leaves_the_connection_reading() -> None:
    reader = asyncio.StreamReader()
    seen: list[object] = []

    def on_notification(method: str, params: object) -> None:
        if params == {"boom": True}:
            raise TypeError("a field had the wrong type")
        seen.append(params)

    async def on_request(method: str, params: object) -> object:
        return {}

    conn = JsonRpcConnection(reader, _Sink(), on_notification=on_notification,  # type: ignore[arg-type]
                             on_request=on_request)
    for params in ({"n": 1}, {"boom": True}, {"n": 2}):
        reader.feed_data(json.dumps({"jsonrpc": "2.0", "method": "x", "params": params}).encode() + b"\n")
    reader.feed_eof()
    await conn.run()
    assert seen == [{"n": 1}, {"n": 2}]
    assert conn.stats.bad_frames == 1


async def test_a_turn_failed_on_our_side_returns_after_the_cancel_wait_even_if_the_agent_ignores_it(
        start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()

    def consumer(event: object) -> None:
        raise RuntimeError("the consumer broke")

    async with asyncio.timeout(10):  # a hang guard only: the prompt budget below is 600 s
        with pytest.raises(RuntimeError, match="the consumer broke"):
            await session.prompt("deaf hello", on_event=consumer, timeout_s=600, cancel_wait_s=0.3)
    assert session.unresponsive  # the agent never ended that turn: callers set the session aside


async def test_no_approver_for_a_gate_of_ask_is_permission_needed(start, agent) -> None:
    from core.acp.client import AcpPermissionNeeded

    rt = await start(agent(tool_gate="ask"))
    session = await rt.new_session()
    with pytest.raises(AcpPermissionNeeded):
        await session.prompt("tool t1 execute rm -rf build\npermission t1\ntext never", timeout_s=600)
    assert not session.unresponsive  # this agent honoured the cancel
