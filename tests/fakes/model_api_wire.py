"""Wire helpers of the loopback model-API mock: server-sent events, and reading what a request asks.

Split from model_api.py to keep it small: the Anthropic and OpenAI request readers, and the shell
tool call the "tool" scenario answers with, in whichever form the agent offers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = [
    "ASK_INPUT",
    "MOCK_TEXT",
    "MOCK_TEXT_PARTS",
    "TOOL_COMMAND",
    "TOOL_DONE_TEXT",
    "TOOL_MARKER",
    "anthropic_ask",
    "anthropic_has_tool_result",
    "anthropic_tool_names",
    "anthropic_tool_result_text",
    "openai_has_tool_output",
    "openai_stream_events",
    "openai_tool_item",
    "openai_tool_names",
    "sse_event",
]

TOOL_COMMAND = "echo peer-tool-ran > marker.txt"
MOCK_TEXT_PARTS = ("Hello ", "from the ", "loopback mock.")
MOCK_TEXT = "".join(MOCK_TEXT_PARTS)
TOOL_MARKER = "marker.txt"
TOOL_DONE_TEXT = "done"


def sse_event(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_has_tool_result(body: dict[str, Any]) -> bool:
    """True when the last user message carries a tool_result block."""
    messages = body.get("messages") or []
    for msg in reversed(messages):
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
    return False


#: The "ask" scenario's AskUserQuestion input (claude-agent-acp 0.101 turns it into an ACP form).
ASK_INPUT = {"questions": [{"question": "Which approach?", "header": "Approach", "multiSelect": False,
                            "options": [{"label": "Small steps", "description": "one change at a time"},
                                        {"label": "Big bang", "description": "all at once"}]}]}


def anthropic_tool_result_text(body: dict[str, Any]) -> str:
    """The text of the last tool_result the agent sent back ("" when there is none)."""
    for msg in reversed(body.get("messages") or []):
        content = msg.get("content") if isinstance(msg, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    return " ".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
                return str(inner or "")
    return ""


def anthropic_ask(body: dict[str, Any], tool_id: str) -> tuple[list[dict[str, Any]], str]:
    """The "ask" scenario's answer (blocks, stop reason): AskUserQuestion, then the tool's result."""
    if not anthropic_has_tool_result(body):
        return [{"type": "tool_use", "id": tool_id, "name": "AskUserQuestion", "input": ASK_INPUT}], "tool_use"
    return [{"type": "text", "text": f"answered: {anthropic_tool_result_text(body)}"}], "end_turn"


def anthropic_tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]


def openai_has_tool_output(body: dict[str, Any]) -> bool:
    """True when the input, after its last user message, carries a tool call's output."""
    items = body.get("input")
    if not isinstance(items, list):
        return False
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("function_call_output", "local_shell_call_output", "custom_tool_call_output"):
            return True
        if item.get("role") == "user":
            return False
    return False


def openai_tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            names.append(t.get("name") or t.get("type", ""))
    return names


def openai_tool_item(names: list[str], n: int) -> dict[str, Any]:
    """A shell call in whichever form the agent offers. ``exec_command`` (codex 0.13x unified exec)
    asks for ``require_escalated`` so that even a read-only sandbox routes it through approval."""
    call_id = f"call_mock{n}"
    if "exec_command" in names:
        name = "exec_command"
        args: dict[str, Any] = {
            "cmd": TOOL_COMMAND,
            "sandbox_permissions": "require_escalated",
            "justification": "Write the peer marker file?",
            "yield_time_ms": 10_000,
        }
    elif "shell_command" in names:
        name = "shell_command"
        args = {
            "command": TOOL_COMMAND,
            "with_escalated_permissions": True,
            "justification": "Write the marker?",
        }
    elif "local_shell" in names and "shell" not in names:
        return {
            "type": "local_shell_call",
            "id": f"lsh_mock{n}",
            "call_id": call_id,
            "status": "completed",
            "action": {"type": "exec", "command": ["bash", "-lc", TOOL_COMMAND]},
        }
    else:
        name = "shell"
        args = {
            "command": ["bash", "-lc", TOOL_COMMAND],
            "timeout_ms": 10_000,
            "with_escalated_permissions": True,
            "justification": "Write the marker?",
        }
    return {
        "type": "function_call",
        "id": f"fc_mock{n}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
        "status": "completed",
    }


def openai_stream_events(items: list[dict[str, Any]], response_obj: dict[str, Any],
                         parts: tuple[str, ...]) -> Iterator[bytes]:
    """The Responses API events streaming ``items`` (messages and tool calls), then response.completed.
    A message whose text is the mock text comes in ``parts`` (separate deltas)."""
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            added = {**item, "status": "in_progress", "content": []}
            yield (
                sse_event(
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": index, "item": added},
                )
            )
            yield (
                sse_event(
                    "response.content_part.added",
                    {
                        "type": "response.content_part.added",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []},
                    },
                )
            )
            for part in parts if text == "".join(parts) else (text,):
                yield (
                    sse_event(
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": 0,
                            "delta": part,
                        },
                    )
                )
            yield (
                sse_event(
                    "response.output_text.done",
                    {
                        "type": "response.output_text.done",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "text": text,
                    },
                )
            )
        else:
            yield (
                sse_event(
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": index, "item": item},
                )
            )
        yield (
            sse_event(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        )
    done = {
        **response_obj,
        "status": "completed",
        "output": items,
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 16,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 26,
        },
    }
    yield (sse_event("response.completed", {"type": "response.completed", "response": done}))
