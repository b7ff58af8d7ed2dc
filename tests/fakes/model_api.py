"""A loopback model-API mock: Anthropic Messages, OpenAI Responses and Chat Completions, and Gemini
APIs on 127.0.0.1.

Real agents (claude-agent-acp, codex-acp, gemini-cli, Copilot CLI, Qwen Code, opencode) are pointed
at it so the peer tier runs offline (Chat Completions: model_api_chat.py):

    async with ModelApiMock() as mock:
        mock.scenario = "text"            # or "401" "429" "400" "529" "refusal" "hang" "tool" "ask"
        env = {"ANTHROPIC_BASE_URL": mock.base_url}          # claude
        base = mock.openai_base_url                           # codex: ".../v1"
        env = {"GOOGLE_GEMINI_BASE_URL": mock.base_url}      # gemini (model_api_gemini.py)
        ...
        await mock.wait_for_request("/v1/messages", timeout_s=10)
        mock.requests                      # every request received (RecordedRequest)

Scenarios apply to the *conversation* requests, the ones an agent makes to run a turn: an
Anthropic request that offers tools, every ``/v1/responses`` request, Gemini's streamed calls
(gemini-cli knows text, the HTTP errors and "hang"; other scenarios answer text). Housekeeping requests the
agent makes on the side (title generation, quota probes: Anthropic requests without tools) get a
plain text answer except in the HTTP-error scenarios, where a real provider would fail them too.

"tool" looks at the request itself: when the last user turn carries no tool result, the answer
is a tool call running ``TOOL_COMMAND`` in the agent's cwd: Anthropic ``Bash``; on the Responses
API whichever shell tool the agent offers (codex-acp 0.16 and 2.6 offer ``exec_command``, called with
``sandbox_permissions: "require_escalated"`` so that even its read-only default mode asks for
approval). When the request carries the tool's result, the answer is the text ``"done"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.model_api_chat import serve_chat
from tests.fakes.model_api_gemini import serve_gemini
from tests.fakes.model_api_wire import (
    MOCK_TEXT,
    MOCK_TEXT_PARTS,
    TOOL_COMMAND,
    TOOL_DONE_TEXT,
    TOOL_MARKER,
    anthropic_ask,
    anthropic_has_tool_result,
    anthropic_tool_names,
    openai_has_tool_output,
    openai_stream_events,
    openai_tool_item,
    openai_tool_names,
    sse_event,
)

__all__ = [
    "ANTHROPIC_ERRORS",
    "MOCK_TEXT",
    "MOCK_TEXT_PARTS",
    "OPENAI_ERRORS",
    "SCENARIOS",
    "TOOL_COMMAND",
    "TOOL_DONE_TEXT",
    "TOOL_MARKER",
    "ModelApiMock",
    "RecordedRequest",
]

SCENARIOS = ("text", "401", "429", "400", "529", "refusal", "hang", "tool", "ask")

MODEL_ID = "claude-mock-1"

# scenario -> (HTTP status, Anthropic error type, message). "Improperly formed request." is the
# provider wording that Kiro also surfaces.
ANTHROPIC_ERRORS: dict[str, tuple[int, str, str]] = {
    "401": (401, "authentication_error", "invalid x-api-key"),
    "429": (
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    ),
    "400": (400, "invalid_request_error", "Improperly formed request."),
    "529": (529, "overloaded_error", "Overloaded"),
}
OPENAI_ERRORS: dict[str, tuple[int, str, str | None, str]] = {
    "401": (401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: test-key."),
    "429": (429, "rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached for requests"),
    "400": (400, "invalid_request_error", None, "Improperly formed request."),
    "529": (529, "server_error", "overloaded", "The server is overloaded."),
}


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, the raw text when not JSON, None when empty
    t: float = field(default_factory=time.monotonic)
    api: str = ""  # "anthropic" | "openai" | "gemini" | ""
    conversation: bool = False  # a turn request the scenario applied to
    answered: str = ""  # what the mock did: "text", "tool_use", "error 429", "hang", ...
    disconnected: bool = False  # hang: the client went away

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


class ModelApiMock:
    """Anthropic ``/v1/messages`` + OpenAI ``/v1/responses`` on 127.0.0.1, port chosen by the OS."""

    def __init__(self, scenario: str = "text") -> None:
        self._scenario = "text"
        self.scenario = scenario
        self.requests: list[RecordedRequest] = []
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._changed = asyncio.Condition()
        self._stopping = asyncio.Event()
        self._ids = itertools.count(1)

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> ModelApiMock:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._anthropic_messages)
        app.router.add_post("/v1/messages/count_tokens", self._anthropic_count_tokens)
        app.router.add_post("/v1/responses", self._openai_responses)
        app.router.add_post("/v1beta/models/{call}", self._gemini)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/", self._root)
        app.router.add_route("*", "/{tail:.*}", self._fallback)
        runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._runner = runner
        return self

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> ModelApiMock:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        """For ``ANTHROPIC_BASE_URL`` (the SDK appends ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """For an OpenAI-style provider ``base_url`` (the client appends ``/responses``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def scenario(self) -> str:
        return self._scenario

    @scenario.setter
    def scenario(self, value: str) -> None:
        if value not in SCENARIOS:
            raise ValueError(f"unknown scenario {value!r}; one of {', '.join(SCENARIOS)}")
        self._scenario = value

    # -- request log ---------------------------------------------------------------------------
    def conversation_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.conversation]

    async def wait_for_request(
        self,
        path: str | None = None,
        *,
        count: int = 1,
        conversation: bool = True,
        predicate: Callable[[RecordedRequest], bool] | None = None,
        timeout_s: float = 30.0,
    ) -> RecordedRequest:
        """Wait until ``count`` matching requests have arrived; return the last of them."""

        def matching() -> list[RecordedRequest]:
            return [
                r
                for r in self.requests
                if (path is None or r.path == path)
                and (not conversation or r.conversation)
                and (predicate is None or predicate(r))
            ]

        async def waiter() -> RecordedRequest:
            async with self._changed:
                await self._changed.wait_for(lambda: len(matching()) >= count)
                return matching()[count - 1]

        return await asyncio.wait_for(waiter(), timeout_s)

    async def _record(self, request: web.Request, api: str) -> RecordedRequest:
        raw = await request.read()
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        rec = RecordedRequest(
            method=request.method,
            path=request.path,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            api=api,
        )
        self.requests.append(rec)
        return rec

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- shared endpoints -------------------------------------------------------------------
    async def _gemini(self, request: web.Request) -> web.StreamResponse:
        return await serve_gemini(self, request)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await serve_chat(self, request)

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request, "")
        await self._notify()
        return web.json_response({"data": [], "has_more": False, "first_id": None, "last_id": None})

    async def _root(self, request: web.Request) -> web.Response:
        """Connectivity probes (claude's SDK sends ``HEAD /``)."""
        await self._record(request, "")
        await self._notify()
        return web.Response(status=200)

    async def _fallback(self, request: web.Request) -> web.Response:
        rec = await self._record(request, "")
        rec.answered = "404"
        await self._notify()
        return web.json_response(
            {"type": "error", "error": {"type": "not_found_error", "message": f"no route {request.path}"}},
            status=404,
        )

    async def _hang(self, request: web.Request, resp: web.StreamResponse, rec: RecordedRequest) -> None:
        """Keep the stream open, sending nothing more, until the client or the mock goes away."""
        rec.answered = "hang"
        await self._notify()
        while not self._stopping.is_set():
            transport = request.transport
            if transport is None or transport.is_closing():
                rec.disconnected = True
                await self._notify()
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), 0.05)
        with contextlib.suppress(Exception):
            await resp.write_eof()

    # -- Anthropic -----------------------------------------------------------------------------
    async def _anthropic_count_tokens(self, request: web.Request) -> web.Response:
        await self._record(request, "anthropic")
        await self._notify()
        return web.json_response({"input_tokens": 10})

    async def _anthropic_messages(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request, "anthropic")
        body = rec.body if isinstance(rec.body, dict) else {}
        scenario = self.scenario
        rec.conversation = bool(body.get("tools"))
        if scenario in ANTHROPIC_ERRORS:
            status, etype, message = ANTHROPIC_ERRORS[scenario]
            rec.answered = f"error {status}"
            await self._notify()
            headers = {"request-id": "req_mock"}
            if status == 429:
                headers["retry-after"] = "1"
            return web.json_response(
                {"type": "error", "error": {"type": etype, "message": message}, "request_id": "req_mock"},
                status=status,
                headers=headers,
            )
        if not rec.conversation:
            scenario = "text"

        stop_reason = "end_turn"
        blocks: list[dict[str, Any]]
        if scenario == "tool" and not anthropic_has_tool_result(body):
            names = anthropic_tool_names(body)
            tool = "Bash" if "Bash" in names else (names[0] if names else "Bash")
            tool_input = {"command": TOOL_COMMAND, "description": "Write the peer marker file"}
            blocks = [
                {"type": "tool_use", "id": f"toolu_mock{next(self._ids)}", "name": tool, "input": tool_input}
            ]
            stop_reason = "tool_use"
            rec.answered = "tool_use"
        elif scenario == "tool":
            blocks = [{"type": "text", "text": TOOL_DONE_TEXT}]
            rec.answered = "text"
        elif scenario == "ask":  # AskUserQuestion, then the text "answered: <the tool's result>"
            blocks, stop_reason = anthropic_ask(body, f"toolu_mock{next(self._ids)}")
            rec.answered = "tool_use" if stop_reason == "tool_use" else "text"
        elif scenario == "refusal":
            blocks = []
            stop_reason = "refusal"
            rec.answered = "refusal"
        else:
            blocks = [{"type": "text", "text": MOCK_TEXT}]
            rec.answered = "text" if scenario != "hang" else "hang"

        model = body.get("model") or MODEL_ID
        msg_id = f"msg_mock{next(self._ids)}"
        usage = {
            "input_tokens": 10,
            "output_tokens": 16,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }

        if not body.get("stream"):
            await self._notify()
            return web.json_response(
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )

        resp = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "request-id": "req_mock",
            },
        )
        await resp.prepare(request)
        start = {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {**usage, "output_tokens": 1},
            },
        }
        await resp.write(sse_event("message_start", start))
        if scenario == "hang":
            await self._hang(request, resp, rec)
            return resp
        await self._notify()
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                await resp.write(
                    sse_event(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {"type": "text", "text": ""},
                        },
                    )
                )
                parts = MOCK_TEXT_PARTS if block["text"] == MOCK_TEXT else (block["text"],)
                for part in parts:
                    await resp.write(
                        sse_event(
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "text_delta", "text": part},
                            },
                        )
                    )
            else:  # tool_use
                await resp.write(
                    sse_event(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {**block, "input": {}},
                        },
                    )
                )
                await resp.write(
                    sse_event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                        },
                    )
                )
            await resp.write(sse_event("content_block_stop", {"type": "content_block_stop", "index": index}))
        await resp.write(
            sse_event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            )
        )
        await resp.write(sse_event("message_stop", {"type": "message_stop"}))
        await resp.write_eof()
        return resp

    # -- OpenAI Responses ------------------------------------------------------------------------
    async def _openai_responses(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request, "openai")
        body = rec.body if isinstance(rec.body, dict) else {}
        scenario = self.scenario
        rec.conversation = True
        if scenario in OPENAI_ERRORS:
            status, etype, code, message = OPENAI_ERRORS[scenario]
            rec.answered = f"error {status}"
            await self._notify()
            return web.json_response(
                {"error": {"type": etype, "code": code, "message": message, "param": None}},
                status=status,
                headers={"x-request-id": "req_mock"},
            )

        resp_id = f"resp_mock{next(self._ids)}"
        model = body.get("model") or "gpt-mock"
        resp = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "x-request-id": "req_mock",
            },
        )
        await resp.prepare(request)
        response_obj: dict[str, Any] = {
            "id": resp_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "model": model,
            "output": [],
        }
        await resp.write(sse_event("response.created", {"type": "response.created", "response": response_obj}))
        if scenario == "hang":
            await self._hang(request, resp, rec)
            return resp

        items: list[dict[str, Any]] = []
        if scenario == "tool" and not openai_has_tool_output(body):
            items.append(openai_tool_item(openai_tool_names(body), next(self._ids)))
            rec.answered = "tool_use"
        else:
            text = TOOL_DONE_TEXT if scenario == "tool" else MOCK_TEXT
            items.append(
                {
                    "type": "message",
                    "id": f"msg_mock{next(self._ids)}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
            rec.answered = "text"
        await self._notify()

        for frame in openai_stream_events(items, response_obj, MOCK_TEXT_PARTS):
            await resp.write(frame)
        await resp.write_eof()
        return resp
