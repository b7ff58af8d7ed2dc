"""OpenAI Chat Completions (``POST /v1/chat/completions``) for the loopback model-API mock.

Copilot CLI (``COPILOT_PROVIDER_TYPE=openai``) and Qwen Code (``OPENAI_BASE_URL``) speak it. A
streamed answer is server-sent events, one ``data: <chat.completion.chunk>`` per delta and a last
``data: [DONE]``; a tool call streams as ``delta.tool_calls`` and ends with ``finish_reason:
"tool_calls"``. Errors use OpenAI's envelope ``{"error": {"message", "type", "code", "param"}}``.
A request that offers tools is a turn request; the agents' side calls (titles, qwen's next-speaker
check) offer none and get a plain answer, except in the HTTP-error scenarios.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from tests.fakes.model_api_wire import MOCK_TEXT, MOCK_TEXT_PARTS, TOOL_COMMAND, TOOL_DONE_TEXT

__all__ = [
    "CHAT_ERRORS",
    "chat_answer",
    "chat_error",
    "chat_stream",
    "chat_tool_call",
    "has_tool_result",
    "serve_chat",
]

# scenario -> (HTTP status, error type, code, message): the wordings OpenAI-compatible providers send.
CHAT_ERRORS: dict[str, tuple[int, str, str | None, str]] = {
    "401": (401, "invalid_request_error", "invalid_api_key",
            "Incorrect API key provided: test-key. You can find your API key at https://platform.openai.com/account/api-keys."),
    "429": (429, "rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached for requests"),
    "400": (400, "invalid_request_error", None, "Improperly formed request."),
    "529": (529, "server_error", "overloaded", "The server is overloaded."),
}

_SHELL_NAMES = ("bash", "shell", "run_shell_command", "execute", "run_command", "powershell")


def chat_error(scenario: str) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body of an error scenario."""
    status, etype, code, message = CHAT_ERRORS[scenario]
    return status, {"error": {"message": message, "type": etype, "code": code, "param": None}}


def has_tool_result(body: dict[str, Any]) -> bool:
    """True when the messages after the last user message carry a tool result."""
    for msg in reversed(body.get("messages") or []):
        if not isinstance(msg, dict):
            continue
        if msg.get("role") == "tool":
            return True
        if msg.get("role") == "user":
            return False
    return False


def _tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out[fn["name"]] = fn.get("parameters") or {}
    return out


def chat_tool_call(body: dict[str, Any], command: str, n: int) -> dict[str, Any]:
    """A call of the shell tool the agent offers, running ``command``; other required fields get
    harmless values of their type (Copilot's ``description``, qwen's ``is_background``)."""
    tools = _tools(body)
    name = next((t for t in tools if t.lower() in _SHELL_NAMES), next(iter(tools), "bash"))
    schema = tools.get(name, {})
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    args: dict[str, Any] = {"command": command}
    for key in schema.get("required") or []:
        if key in args:
            continue
        kind = (props.get(key) or {}).get("type")
        args[key] = {"boolean": False, "integer": 10_000, "number": 10_000}.get(
            kind, "Write the peer marker file")
    return {"id": f"call_mock{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None,
           usage: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": int(time.time()),
                           "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        out["usage"] = usage
    return out


def _data(obj: dict[str, Any] | str) -> bytes:
    return f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode()


_USAGE = {"prompt_tokens": 10, "completion_tokens": 16, "total_tokens": 26}


def chat_stream(model: str, *, parts: tuple[str, ...] = (), tool_call: dict[str, Any] | None = None,
                start_only: bool = False) -> Iterator[bytes]:
    """The SSE frames of one answer: ``parts`` as text deltas, or ``tool_call``; ``start_only``
    stops after the role chunk (the "hang" scenario keeps the stream open there)."""
    yield _data(_chunk(model, {"role": "assistant", "content": ""}))
    if start_only:
        return
    for part in parts:
        yield _data(_chunk(model, {"content": part}))
    if tool_call is not None:
        yield _data(_chunk(model, {"tool_calls": [{"index": 0, **tool_call}]}))
    yield _data(_chunk(model, {}, "tool_calls" if tool_call else "stop"))
    yield _data(_chunk(model, {}, None, _USAGE) | {"choices": []})
    yield _data("[DONE]")


def chat_answer(model: str, text: str) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` with ``text``."""
    return {"id": "chatcmpl-mock", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": _USAGE}


async def serve_chat(mock: Any, request: web.Request) -> web.StreamResponse:
    """``POST /v1/chat/completions`` on ``mock`` (a ModelApiMock), in its current scenario."""
    rec = await mock._record(request, "chat")
    body = rec.body if isinstance(rec.body, dict) else {}
    scenario, model = mock.scenario, str(body.get("model") or "gpt-mock")
    rec.conversation = bool(body.get("tools"))
    if scenario in CHAT_ERRORS:
        status, error = chat_error(scenario)
        rec.answered = f"error {status}"
        await mock._notify()
        headers = {"x-request-id": "req_mock", **({"retry-after": "1"} if status == 429 else {})}
        return web.json_response(error, status=status, headers=headers)
    if not rec.conversation:
        scenario = "text"
    if not body.get("stream"):
        rec.answered = "text"
        await mock._notify()
        return web.json_response(chat_answer(model, MOCK_TEXT))
    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    if scenario == "hang":
        for frame in chat_stream(model, start_only=True):
            await resp.write(frame)
        await mock._hang(request, resp, rec)
        return resp
    if scenario == "tool" and not has_tool_result(body):
        frames = chat_stream(model, tool_call=chat_tool_call(body, TOOL_COMMAND, next(mock._ids)))
        rec.answered = "tool_use"
    else:
        frames = chat_stream(model, parts=(TOOL_DONE_TEXT,) if scenario == "tool" else MOCK_TEXT_PARTS)
        rec.answered = "text"
    await mock._notify()
    for frame in frames:
        await resp.write(frame)
    await resp.write_eof()
    return resp
