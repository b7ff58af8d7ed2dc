"""Self-check of the fake ACP agent (tests/fakes/acp_agent.py) and the schema oracle (acp_schema.py).

Drives the fake agent over plain asyncio subprocess pipes (not the project's client).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import jsonschema
import pytest

from .acp_schema import validate_agent_frame, validate_client_frame, validate_record_file

AGENT = Path(__file__).resolve().parent / "acp_agent.py"
TIMEOUT = 5.0


class Wire:
    """Minimal NDJSON JSON-RPC peer for the fake agent; validates every frame both ways."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.next_id = 0
        self.inbox: list[dict] = []  # agent frames not yet consumed
        self.sent: list[dict] = []
        self.methods: dict[object, str] = {}  # our request id -> method (to validate the answers)

    @classmethod
    async def start(cls, *flags: str) -> Wire:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(AGENT),
            *flags,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def send(self, frame: dict) -> None:
        validate_client_frame(frame)
        self.sent.append(frame)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict) -> object:
        rid = self.next_id
        self.next_id += 1
        self.methods[rid] = method
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    async def notify(self, method: str, params: dict) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def read(self) -> dict:
        assert self.proc.stdout is not None
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), TIMEOUT)
            assert line, "agent closed stdout"
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if not isinstance(frame, dict) or "jsonrpc" not in frame:
                continue
            method = None if "method" in frame else self.methods.get(frame.get("id"))
            if "method" not in frame and "result" not in frame:
                method = None
            validate_agent_frame(frame, request_method=method)
            return frame

    async def until(self, pred) -> dict:
        for i, f in enumerate(self.inbox):
            if pred(f):
                return self.inbox.pop(i)
        while True:
            f = await self.read()
            if pred(f):
                return f
            self.inbox.append(f)

    async def response(self, rid: object) -> dict:
        return await self.until(lambda f: f.get("id") == rid and "method" not in f)

    async def call(self, method: str, params: dict) -> dict:
        return await self.response(await self.request(method, params))

    def texts(self) -> list[str]:
        out = [
            f["params"]["update"]["content"]["text"]
            for f in self.inbox
            if f.get("method") == "session/update"
            and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        return out

    async def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            return await asyncio.wait_for(self.proc.wait(), TIMEOUT)
        except TimeoutError:
            self.proc.kill()
            return await self.proc.wait()


async def _session(wire: Wire) -> str:
    init = await wire.call(
        "initialize",
        {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
            "clientInfo": {"name": "selfcheck", "version": "0"},
        },
    )
    assert init["result"]["protocolVersion"] == 1
    assert init["result"]["agentCapabilities"]["loadSession"] is True
    new = await wire.call("session/new", {"cwd": "/tmp", "mcpServers": []})
    return new["result"]["sessionId"]


def _prompt(sid: str, text: str) -> dict:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


async def test_round_trip_text_and_load(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    wire = await Wire.start("--record", str(record), "--noise", "--config-options", "a,b")
    try:
        sid = await _session(wire)
        res = await wire.call("session/prompt", _prompt(sid, "text hi\nplan x:one|>:two|three\nusage 5 100"))
        assert res["result"] == {"stopReason": "end_turn"}
        assert wire.texts() == ["hi"]
        kinds = [f["params"]["update"]["sessionUpdate"] for f in wire.inbox]
        assert kinds == ["agent_message_chunk", "plan", "usage_update"]
        wire.inbox.clear()
        res = await wire.call("session/prompt", _prompt(sid, "hello"))
        assert wire.texts() == ["echo: hello"] and res["result"]["stopReason"] == "end_turn"
        wire.inbox.clear()
        set_opt = await wire.call(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "b"}
        )
        assert set_opt["result"]["configOptions"][0]["currentValue"] == "b"
        load = await wire.call("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
        replay = [
            (f["params"]["update"]["sessionUpdate"], f["params"]["update"]["content"]["text"])
            for f in wire.inbox
        ]
        assert replay[-2:] == [("user_message_chunk", "hello"), ("agent_message_chunk", "echo: hello")]
        assert load["result"]["modes"]["currentModeId"] == "default"
        missing = await wire.call("session/load", {"sessionId": "nope", "cwd": "/tmp", "mcpServers": []})
        assert missing["error"]["code"] == -32002
    finally:
        assert await wire.close() == 0
    frames = validate_record_file(record)
    assert [f.get("method") for f in frames][:2] == ["initialize", "session/new"]


async def test_a_step_may_name_a_value_of_the_parents_environment_and_die_with_its_own_words() -> None:
    with open("/proc/self/environ", "rb") as f:  # what the agent reads: this process's environment at exec
        ours = dict(item.decode().partition("=")[::2] for item in f.read().split(b"\0") if item)
    wire = await Wire.start()
    try:
        sid = await _session(wire)
        script = ("text {parent_env:PATH}\ntext {parent_env:PATH[2:7]}\ntext <{parent_env:NO_SUCH_VARIABLE_X}>\n"
                  "die 4 fatal: {parent_env:PATH[:3]}")
        await wire.request("session/prompt", _prompt(sid, script))
        while len(wire.texts()) < 3:
            wire.inbox.append(await wire.read())
        assert wire.texts() == [ours["PATH"], ours["PATH"][2:7], "<>"]
        assert await asyncio.wait_for(wire.proc.wait(), TIMEOUT) == 4
    finally:
        await wire.close()
    assert wire.proc.stderr is not None
    assert (await wire.proc.stderr.read()).decode().splitlines()[-1] == f"fatal: {ours['PATH'][:3]}"


async def test_cancel_hang() -> None:
    wire = await Wire.start()
    try:
        sid = await _session(wire)
        rid = await wire.request("session/prompt", _prompt(sid, "text working\nhang"))
        await wire.until(lambda f: f.get("method") == "session/update")
        busy = await wire.call("session/prompt", _prompt(sid, "text again"))
        assert busy["error"]["code"] == -32603
        await wire.notify("session/cancel", {"sessionId": sid})
        res = await wire.response(rid)
        assert res["result"] == {"stopReason": "cancelled"}
    finally:
        await wire.close()


async def test_permission_round_trip_and_cancel_abandons_it() -> None:
    wire = await Wire.start()
    try:
        sid = await _session(wire)
        rid = await wire.request(
            "session/prompt", _prompt(sid, "tool t1 execute run ls\npermission t1\ntext done")
        )
        perm = await wire.until(lambda f: f.get("method") == "session/request_permission")
        assert perm["params"]["toolCall"]["toolCallId"] == "t1"
        allow = next(o for o in perm["params"]["options"] if o["kind"] == "allow_once")
        await wire.send(
            {
                "jsonrpc": "2.0",
                "id": perm["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}},
            }
        )
        res = await wire.response(rid)
        assert res["result"]["stopReason"] == "end_turn"
        assert wire.texts() == ["permission:selected:allow-once", "done"]
        statuses = [
            f["params"]["update"].get("status")
            for f in wire.inbox
            if f["params"]["update"]["sessionUpdate"].startswith("tool_call")
        ]
        assert statuses == ["pending", "completed"]
        wire.inbox.clear()

        rid = await wire.request("session/prompt", _prompt(sid, "permission t2\ntext never"))
        perm = await wire.until(lambda f: f.get("method") == "session/request_permission")
        await wire.notify("session/cancel", {"sessionId": sid})
        res = await wire.response(rid)
        assert res["result"] == {"stopReason": "cancelled"}
        # a late answer to the abandoned request is ignored
        await wire.send({"jsonrpc": "2.0", "id": perm["id"], "result": {"outcome": {"outcome": "cancelled"}}})
        ok = await wire.call("session/prompt", _prompt(sid, "stop max_tokens"))
        assert ok["result"] == {"stopReason": "max_tokens"}
    finally:
        await wire.close()


def test_schema_accepts_valid_and_rejects_invalid_client_frames() -> None:
    validate_client_frame(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]},
        }
    )
    validate_client_frame({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}})
    validate_client_frame(
        {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}},
        request_method="session/request_permission",
    )
    validate_client_frame(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/set_model",
            "params": {"sessionId": "s", "modelId": "m"},
        }
    )
    bad = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/prompt",
            "params": {"prompt": [{"type": "text", "text": "hi"}]},
        },
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"}},
        {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected"}}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {}},
        {"id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/nonsense", "params": {}},
    ]
    for frame in bad:
        with pytest.raises(jsonschema.ValidationError):
            validate_client_frame(frame)
