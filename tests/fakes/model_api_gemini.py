"""The Gemini API (``generateContent``, ``streamGenerateContent``) for the loopback model-API mock.

gemini-cli (``GOOGLE_GEMINI_BASE_URL=<mock>``) calls ``POST /v1beta/models/<model>:<method>``;
the stream is server-sent events, one ``data: <GenerateContentResponse>`` per chunk. Errors use
Google's envelope ``{"error": {"code", "message", "status"}}``. Only the streamed calls are turn
requests: gemini-cli also makes side calls (its model router, its loop detector) without streaming.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["GEMINI_ERRORS", "gemini_chunk", "gemini_error", "gemini_sse"]

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
