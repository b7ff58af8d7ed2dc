"""The loopback model-API mock itself (fast, no agents): wire shapes the real agents depend on."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from tests.fakes.model_api import MOCK_TEXT, MOCK_TEXT_PARTS, TOOL_COMMAND, TOOL_DONE_TEXT, ModelApiMock


def _events(raw: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        out.append((lines["event"], json.loads(lines["data"])))
    return out


_TOOLS = [{"name": "Bash", "input_schema": {}}, {"name": "Read", "input_schema": {}}]


async def _post(mock: ModelApiMock, path: str, body: dict[str, Any]) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(mock.base_url + path, json=body) as resp,
    ):
        return resp.status, await resp.text()


async def test_anthropic_text_stream_has_the_full_event_sequence() -> None:
    async with ModelApiMock() as mock:
        status, raw = await _post(mock, "/v1/messages", {"stream": True, "tools": _TOOLS, "messages": []})
    assert status == 200
    events = _events(raw)
    names = [name for name, _ in events]
    assert names[0] == "message_start"
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == MOCK_TEXT
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert mock.conversation_requests()[0].answered == "text"


async def test_anthropic_side_requests_get_plain_json_and_are_not_conversation() -> None:
    async with ModelApiMock("tool") as mock:
        status, raw = await _post(mock, "/v1/messages", {"messages": [{"role": "user", "content": "title?"}]})
        assert status == 200
        assert json.loads(raw)["content"] == [{"type": "text", "text": MOCK_TEXT}]
        assert mock.conversation_requests() == []
        async with aiohttp.ClientSession() as http, http.get(mock.base_url + "/v1/models") as resp:
            assert await resp.json() == {"data": [], "has_more": False, "first_id": None, "last_id": None}


async def test_anthropic_errors_use_the_error_envelope() -> None:
    async with ModelApiMock("400") as mock:
        status, raw = await _post(mock, "/v1/messages", {"stream": True, "tools": _TOOLS})
    assert status == 400
    assert json.loads(raw)["error"] == {
        "type": "invalid_request_error",
        "message": "Improperly formed request.",
    }


async def test_anthropic_refusal_stops_with_refusal() -> None:
    async with ModelApiMock("refusal") as mock:
        _, raw = await _post(mock, "/v1/messages", {"stream": True, "tools": _TOOLS})
    delta = next(d for n, d in _events(raw) if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "refusal"


async def test_anthropic_tool_then_done_after_the_tool_result() -> None:
    async with ModelApiMock("tool") as mock:
        first = {"stream": True, "tools": _TOOLS, "messages": [{"role": "user", "content": "go"}]}
        _, raw = await _post(mock, "/v1/messages", first)
        start = next(d for n, d in _events(raw) if n == "content_block_start")["content_block"]
        assert (start["type"], start["name"]) == ("tool_use", "Bash")
        partial = next(d for n, d in _events(raw) if n == "content_block_delta")["delta"]["partial_json"]
        assert json.loads(partial)["command"] == TOOL_COMMAND
        result = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": start["id"], "content": ""}],
        }
        second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": []}, result]}
        _, raw = await _post(mock, "/v1/messages", second)
    text = "".join(d["delta"]["text"] for n, d in _events(raw) if n == "content_block_delta")
    assert text == TOOL_DONE_TEXT
    assert [r.answered for r in mock.conversation_requests()] == ["tool_use", "text"]


async def test_responses_text_stream_and_errors() -> None:
    async with ModelApiMock() as mock:
        status, raw = await _post(mock, "/v1/responses", {"stream": True, "input": []})
        assert status == 200
        names = [n for n, _ in _events(raw)]
        assert names[0] == "response.created"
        assert "response.output_item.added" in names
        assert names[-2:] == ["response.output_item.done", "response.completed"]
        text = "".join(d["delta"] for n, d in _events(raw) if n == "response.output_text.delta")
        assert text == MOCK_TEXT
        mock.scenario = "429"
        status, raw = await _post(mock, "/v1/responses", {"stream": True})
        assert status == 429
        assert json.loads(raw)["error"]["type"] == "rate_limit_exceeded"


async def test_responses_tool_call_then_done_after_its_output() -> None:
    tools = [{"type": "function", "name": "exec_command"}]
    async with ModelApiMock("tool") as mock:
        first = {
            "stream": True,
            "tools": tools,
            "input": [{"type": "message", "role": "user", "content": []}],
        }
        _, raw = await _post(mock, "/v1/responses", first)
        item = next(d for n, d in _events(raw) if n == "response.output_item.done")["item"]
        assert (item["type"], item["name"]) == ("function_call", "exec_command")
        assert json.loads(item["arguments"])["cmd"] == TOOL_COMMAND
        output = {"type": "function_call_output", "call_id": item["call_id"], "output": "ok"}
        _, raw = await _post(mock, "/v1/responses", {**first, "input": [*first["input"], item, output]})
    text = "".join(d["delta"] for n, d in _events(raw) if n == "response.output_text.delta")
    assert text == TOOL_DONE_TEXT


async def test_hang_holds_the_stream_until_the_client_leaves_and_stop_is_prompt() -> None:
    async with ModelApiMock("hang") as mock:
        async with aiohttp.ClientSession() as http:
            resp = await http.post(mock.base_url + "/v1/messages", json={"stream": True, "tools": _TOOLS})
            first = await resp.content.readline()
            assert first.startswith(b"event: message_start")
            await mock.wait_for_request("/v1/messages", timeout_s=5)
            with_timeout = asyncio.wait_for(resp.content.read(), 0.3)
            try:
                await with_timeout
                raise AssertionError("the hung stream ended")
            except TimeoutError:
                pass
            resp.close()
        rec = mock.conversation_requests()[0]
        await mock.wait_for_request(predicate=lambda r: r.disconnected, timeout_s=5)
        assert rec.disconnected
        # A stream still hanging when the mock stops must not hold up the shutdown.
        http2 = aiohttp.ClientSession()
        resp2 = await http2.post(mock.base_url + "/v1/responses", json={"stream": True})
        await mock.wait_for_request("/v1/responses", timeout_s=5)
        started = time.monotonic()
    assert time.monotonic() - started < 2.0
    resp2.close()
    await http2.close()


async def test_gemini_stream_side_call_and_error_envelope() -> None:
    async with ModelApiMock() as mock:
        status, raw = await _post(mock, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", {})
        assert status == 200
        chunks = [json.loads(line[len("data: "):]) for line in raw.splitlines() if line.startswith("data: ")]
        texts = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
        assert texts == MOCK_TEXT
        assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
        assert "finishReason" not in chunks[0]["candidates"][0]
        status, raw = await _post(mock, "/v1beta/models/gemini-2.5-flash:generateContent", {})
        assert status == 200 and json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"] == MOCK_TEXT
        assert [r.conversation for r in mock.requests] == [True, False], "only the stream is a turn request"
        mock.scenario = "400"
        status, raw = await _post(mock, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", {})
    assert status == 400
    assert json.loads(raw)["error"] == {"code": 400, "message": "Improperly formed request.",
                                        "status": "INVALID_ARGUMENT"}


def _chat_chunks(raw: str) -> list[Any]:
    """The ``data:`` payloads of a Chat Completions stream, ``[DONE]`` kept as the string."""
    out: list[Any] = []
    for block in raw.strip().split("\n\n"):
        payload = block.removeprefix("data: ")
        out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


_CHAT_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"},
                                     "is_background": {"type": "boolean"}},
    "required": ["command", "description", "is_background"]}}}]


async def test_chat_completions_text_stream_ends_with_done() -> None:
    async with ModelApiMock() as mock:
        body = {"stream": True, "tools": _CHAT_TOOLS, "messages": [{"role": "user", "content": "hi"}]}
        status, raw = await _post(mock, "/v1/chat/completions", body)
    assert status == 200
    chunks = _chat_chunks(raw)
    assert chunks[-1] == "[DONE]"
    deltas = [c["choices"][0]["delta"].get("content") for c in chunks[:-1] if c["choices"]]
    assert "".join(d for d in deltas if d) == MOCK_TEXT
    assert [d for d in deltas if d] == list(MOCK_TEXT_PARTS), "one delta per part"
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1] if c["choices"]][-1] == "stop"
    assert mock.conversation_requests()[0].answered == "text"


async def test_chat_completions_tool_call_fills_the_required_arguments_then_done() -> None:
    async with ModelApiMock("tool") as mock:
        first = {"stream": True, "tools": _CHAT_TOOLS, "messages": [{"role": "user", "content": "go"}]}
        _, raw = await _post(mock, "/v1/chat/completions", first)
        chunks = [c for c in _chat_chunks(raw)[:-1] if c["choices"]]
        deltas = [c["choices"][0]["delta"] for c in chunks]
        [call] = next(d["tool_calls"] for d in deltas if "tool_calls" in d)
        args = json.loads(call["function"]["arguments"])
        assert (call["function"]["name"], args["command"], args["is_background"]) == ("bash", TOOL_COMMAND, False)
        assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
        answered = {"role": "assistant", "tool_calls": [call]}
        result = {"role": "tool", "tool_call_id": call["id"], "content": "ok"}
        second = {**first, "messages": [*first["messages"], answered, result]}
        _, raw = await _post(mock, "/v1/chat/completions", second)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in _chat_chunks(raw)[:-1] if c["choices"])
    assert text == TOOL_DONE_TEXT


async def test_chat_completions_errors_and_side_calls() -> None:
    async with ModelApiMock("401") as mock:
        status, raw = await _post(mock, "/v1/chat/completions", {"stream": True, "tools": _CHAT_TOOLS})
        assert status == 401
        assert json.loads(raw)["error"]["message"].startswith("Incorrect API key provided")
        mock.scenario = "tool"  # a side call (no tools, not streamed): a plain answer, no tool call
        status, raw = await _post(mock, "/v1/chat/completions", {"messages": [{"role": "user", "content": "title?"}]})
        assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == MOCK_TEXT
    assert [r.conversation for r in mock.requests] == [True, False]
