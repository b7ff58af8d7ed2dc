"""The Gemini API (``generateContent``, ``streamGenerateContent``) for the loopback model-API mock.

gemini-cli (``GOOGLE_GEMINI_BASE_URL=<mock>``) calls ``POST /v1beta/models/<model>:<method>``;
the stream is server-sent events, one ``data: <GenerateContentResponse>`` per chunk. Errors use
Google's envelope ``{"error": {"code", "message", "status"}}``. Only the streamed calls are turn
requests: gemini-cli also makes side calls (its model router, its loop detector) without streaming.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tests.fakes.model_api_wire import MOCK_TEXT, MOCK_TEXT_PARTS

__all__ = ["GEMINI_ERRORS", "gemini_chunk", "gemini_error", "gemini_sse", "serve_gemini"]

# scenario -> (HTTP status, Google status, message)
GEMINI_ERRORS: dict[str, tuple[int, str, str]] = {
    "401": (401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
    "429": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    "400": (400, "INVALID_ARGUMENT", "Improperly formed request."),
    "529": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
}


def gemini_error(scenario: str) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body a Gemini endpoint answers in an error scenario."""
    status, google_status, message = GEMINI_ERRORS[scenario]
    return status, {"error": {"code": status, "message": message, "status": google_status}}


def gemini_chunk(text: str, model: str, *, finish: bool) -> dict[str, Any]:
    """One ``GenerateContentResponse``: a text part, and on the last one the finish reason and usage."""
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 16, "totalTokenCount": 26},
        "modelVersion": model,
        "responseId": "resp_mock",
    }


def gemini_sse(data: dict[str, Any]) -> bytes:
    """One server-sent event as the Gemini API writes it (no event name)."""
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


async def serve_gemini(mock: Any, request: web.Request) -> web.StreamResponse:
    """``POST /v1beta/models/<model>:<method>`` on ``mock`` (a ModelApiMock), in its current scenario."""
    rec = await mock._record(request, "gemini")
    model, _, method = request.match_info["call"].partition(":")
    rec.conversation = method == "streamGenerateContent"
    scenario = mock.scenario
    if scenario in GEMINI_ERRORS:
        status, body = gemini_error(scenario)
        rec.answered = f"error {status}"
        await mock._notify()
        return web.json_response(body, status=status)
    if not rec.conversation:  # a side call (router, loop check): one plain answer
        rec.answered = "text"
        await mock._notify()
        return web.json_response(gemini_chunk(MOCK_TEXT, model, finish=True))
    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    if scenario == "hang":
        await mock._hang(request, resp, rec)
        return resp
    rec.answered = "text"
    await mock._notify()
    for i, part in enumerate(MOCK_TEXT_PARTS):
        await resp.write(gemini_sse(gemini_chunk(part, model, finish=i == len(MOCK_TEXT_PARTS) - 1)))
    await resp.write_eof()
    return resp
