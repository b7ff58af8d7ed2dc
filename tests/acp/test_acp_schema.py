"""Every frame our client sends validates against the official ACP schema.

(Every other test of this tier records its frames too and validates them at teardown; this one
walks through all of them on purpose and checks that each kind of frame was really produced.)
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import jsonschema
import pytest

from core.acp.client import AcpPermissionNeeded
from core.acp.types import PermissionRequest
from tests.fakes.acp_schema import validate_client_frame, validate_record_file


async def test_all_client_frames_validate(start, agent, recorder, events, tmp_path) -> None:
    rt = await start(agent("--auth-env", "FAKE_TOKEN", "--config-options", "m1,m2", "--load-replay", "2",
                           env={"FAKE_TOKEN": "x"}, tool_gate="ask"))
    session = await rt.new_session()
    await session.set_mode("plan")
    await session.set_model("m2")
    image = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    await session.prompt([{"type": "text", "text": "report_images"},
                          {"type": "image", "mimeType": "image/png", "data": image}])

    async def allow(request: PermissionRequest) -> str:
        return "allow_always"

    async def reject(request: PermissionRequest) -> str:
        return "reject_once"

    await session.prompt("tool t1 read Read a file\npermission t1", approver=allow)
    await session.prompt("permission t2", approver=reject)
    await session.prompt('request fs/write_text_file {"sessionId": "s", "path": "/x", "content": "y"}')
    with pytest.raises(AcpPermissionNeeded):  # answered cancelled, then session/cancel
        await session.prompt("permission t3")
    ev = events()
    turn = asyncio.create_task(session.prompt("text waiting\nhang", on_event=ev))
    await ev.wait_text("waiting")
    await session.cancel()
    await turn
    await rt.load_session(session.session_id)

    kiro = await start(agent("--kiro", "--models", "k1,k2", "--config-options", "k1,k2", backend="kiro"))
    ksession = await kiro.new_session()
    await ksession.set_model("k2")  # set_config_option -> -32601 -> legacy session/set_model
    await kiro.load_session(ksession.session_id, meta={"_kiro.dev/session_file": str(tmp_path / "k.json")})
    await rt.close()
    await kiro.close()

    frames: list[dict[str, Any]] = []
    for path in recorder.paths:
        frames += validate_record_file(path)
    methods = {f["method"] for f in frames if "method" in f}
    assert methods >= {
        "initialize", "authenticate", "session/new", "session/set_mode", "session/set_config_option",
        "session/set_model", "session/prompt", "session/cancel", "session/load"}
    outcomes = [f["result"]["outcome"] for f in frames if isinstance(f.get("result"), dict)]
    # "allow for this session" reaches the agent as its allow_once option (the relay keeps the scope)
    assert {"outcome": "selected", "optionId": "allow-once"} in outcomes
    assert {"outcome": "selected", "optionId": "reject"} in outcomes
    assert {"outcome": "cancelled"} in outcomes
    assert [f["error"]["code"] for f in frames if "error" in f] == [-32601]
    assert all("_invalid" not in f for f in frames)


def test_the_oracle_rejects_a_bad_frame() -> None:
    """The oracle is not a rubber stamp: a prompt without its sessionId fails it."""
    with pytest.raises(jsonschema.ValidationError):
        validate_client_frame({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                               "params": {"prompt": [{"type": "text", "text": "hi"}]}})
    with pytest.raises(jsonschema.ValidationError):
        validate_client_frame({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected"}}})
