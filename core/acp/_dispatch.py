"""Frames from the agent -> typed events (``session/update`` kinds and Kiro extensions)."""

from __future__ import annotations

import logging
import math
import re
from dataclasses import replace
from typing import Any

from core.acp.exchange import shared_file
from core.acp.types import (
    AcpEvent,
    AgentNotice,
    AvailableCommands,
    CompactionStatus,
    ConfigOptions,
    Cost,
    FileShared,
    KiroMetadata,
    ModeChanged,
    PlanEntry,
    PlanUpdate,
    RateLimitNotice,
    RefusalInfo,
    SessionInfo,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    UnknownUpdate,
    UsageUpdate,
    UserChunk,
)
from core.failures import person_text
from core.redact import redact

__all__ = [
    "ACP_BACKENDS_STRUCTURED_REFUSAL",
    "KIRO_INTERRUPTED",
    "dicts",
    "event_from_extension",
    "event_from_update",
    "parse_refusal",
    "refusal_from_error",
]

log = logging.getLogger("acp_relay.acp.dispatch")

#: Backends whose refusals arrive as a structured frame (Kiro's ``_kiro.dev/metadata``).
ACP_BACKENDS_STRUCTURED_REFUSAL = frozenset({"kiro"})

#: Kiro ends a turn with this exact chunk and sends no prompt response after it.
KIRO_INTERRUPTED = "Tool uses were interrupted, waiting for the next user prompt"

_logged_unknown: set[str] = set()


def _text_of(content: Any) -> str:
    if isinstance(content, dict):
        if content.get("type", "text") == "text" and isinstance(content.get("text"), str):
            return str(content["text"])
        return ""
    if isinstance(content, list):
        return "".join(_text_of(c) for c in content)
    return ""


def dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list field; anything else (null, a number, a string) reads as empty."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


_MAX_TOKENS = 10**15  # beyond any context window; larger numbers cannot even become a float


def _finite(value: Any) -> float | None:
    """A number an agent sent, if it is one: JSON's 1e400 parses as infinity, and NaN is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _cost(value: Any) -> Cost | None:
    """``usage_update.cost`` ({amount, currency}), when it is one."""
    if not isinstance(value, dict):
        return None
    amount, currency = _finite(value.get("amount")), value.get("currency")
    if amount is None or amount < 0 or not isinstance(currency, str) or not currency.strip():
        return None
    return Cost(amount, currency.strip()[:16])


def _plain(value: Any) -> str:
    """An agent's plain-text field, on one line and redacted ("" when absent)."""
    return redact(" ".join(value.split())) if isinstance(value, str) else ""


def _thread_status(meta: Any) -> str:
    """codex-acp 2.x's ``_meta.codex.threadStatus.type``, or "" when the update carries none."""
    codex = meta.get("codex") if isinstance(meta, dict) else None
    status = codex.get("threadStatus") if isinstance(codex, dict) else None
    kind = status.get("type") if isinstance(status, dict) else None
    return kind if isinstance(kind, str) else ""


def _log_unknown_once(kind: str) -> None:
    if kind not in _logged_unknown:
        _logged_unknown.add(kind)
        log.info("ignoring an update kind this relay does not know: %s", kind)


def event_from_update(update: dict[str, Any], tools: dict[str, ToolCall]) -> AcpEvent | None:
    """One ``session/update`` payload -> one typed event. ``tools`` holds merged tool-call state."""
    kind = update.get("sessionUpdate")
    if kind == "agent_message_chunk":
        if (shared := shared_file(update.get("content"))) is not None:
            return FileShared(shared)
        return TextChunk(_text_of(update.get("content")))
    if kind == "agent_thought_chunk":
        return ThoughtChunk(_text_of(update.get("content")))
    if kind == "user_message_chunk":
        return UserChunk(_text_of(update.get("content")))
    if kind in ("tool_call", "tool_call_update"):
        call_id = str(update.get("toolCallId", ""))
        base = tools.get(call_id) or ToolCall(call_id)
        call = base.merged(update)
        if kind == "tool_call":
            call = replace(call, started=True)
        tools[call_id] = call
        return call
    if kind == "plan":
        entries = tuple(
            PlanEntry(str(e.get("content", "")), str(e.get("status", "pending")), str(e.get("priority", "medium")))
            for e in dicts(update.get("entries")))
        return PlanUpdate(entries)
    if kind == "available_commands_update":
        listed = [c for c in dicts(update.get("availableCommands")) if isinstance(c.get("name"), str) and c["name"]]
        return AvailableCommands(tuple(str(c["name"]) for c in listed),
                                 tuple(str(c.get("description") or "") for c in listed))
    if kind == "current_mode_update":
        return ModeChanged(str(update.get("currentModeId", update.get("modeId", ""))))
    if kind == "config_option_update":
        return ConfigOptions(tuple(dicts(update.get("configOptions"))))
    if kind == "usage_update":
        used, size = update.get("used"), update.get("size")
        ok = (isinstance(used, int) and isinstance(size, int)
              and 0 <= used <= _MAX_TOKENS and 0 < size <= _MAX_TOKENS)
        return UsageUpdate(used if ok else None, size if ok else None, _cost(update.get("cost")))
    if kind == "session_info_update":
        return SessionInfo(str(update.get("title") or ""), _thread_status(update.get("_meta")))
    if kind == "compaction_update":
        status = str(update.get("status", ""))
        return CompactionStatus(status, str(update.get("error") or "") if status == "failed" else "")
    if kind == "compaction_summary_chunk":
        return CompactionStatus("summary", _text_of(update.get("content")))
    if kind == "notice":
        return AgentNotice(str(update.get("severity") or "info"), _plain(update.get("title")),
                           _plain(update.get("description")))
    _log_unknown_once(str(kind))
    return UnknownUpdate(str(kind), update)


def parse_refusal(params: dict[str, Any], backend: str) -> RefusalInfo | None:
    """Kiro's CONTENT_FILTERED metadata -> RefusalInfo (structured-refusal backends only).

    Fields the provider did not send stay empty; the explanation is made fit for a person here, at the
    parser (redacted, commands described), like every other sentence an agent sends a person.
    """
    if backend not in ACP_BACKENDS_STRUCTURED_REFUSAL:
        return None
    if str(params.get("stopReason", "")).upper() != "CONTENT_FILTERED":
        return None
    raw = params.get("refusal")
    refusal = raw if isinstance(raw, dict) else {}

    def field(*names: str) -> str:
        for name in names:
            value = refusal.get(name)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return ""

    return RefusalInfo(
        category=field("category"),
        explanation=person_text(field("explanation")),
        recommended_model=field("recommendedModel", "recommended_model"),
    )


_RE_ERROR_PREFIX = re.compile(r"^(?:\s*(?:internal error|api error)\s*:\s*)+", re.I)
_RE_SUGGESTED_MODEL = re.compile(r"/model\s+([\w.:\[\]-]+)")


def refusal_from_error(message: str) -> RefusalInfo:
    """claude-agent-acp 0.23.x reports a usage-policy refusal as an error naming a model to try.

    Only what the provider said is kept: its sentence (redacted, its terminal commands described in
    words, as in all prose) and the bare id of the model it named.
    """
    sentence = _RE_ERROR_PREFIX.sub("", message).strip()
    model = _RE_SUGGESTED_MODEL.search(sentence)
    return RefusalInfo(explanation=person_text(sentence), recommended_model=model.group(1) if model else "")


def event_from_extension(method: str, params: dict[str, Any], backend: str) -> AcpEvent | None:
    """Kiro's ``_kiro.dev/*`` notifications -> events; other extensions -> UnknownUpdate."""
    if method == "_kiro.dev/metadata":
        pct = _finite(params.get("contextUsagePercentage"))
        metering = dicts(params.get("meteringUsage"))
        credits = sum(float(m["value"]) for m in metering if isinstance(m.get("value"), int | float))
        turn = params.get("turnDurationMs")
        return KiroMetadata(
            context_pct=pct,
            credits=credits if metering else None,
            turn_ms=int(turn) if isinstance(turn, int | float) else None,
            refusal=parse_refusal(params, backend),
        )
    if method == "_kiro.dev/compaction/status":
        status = params.get("status")
        if isinstance(status, dict):
            status = status.get("type") or status.get("status")
        return CompactionStatus(str(status or ""), str(params.get("message") or ""))
    if method == "_kiro.dev/error/rate_limit":
        return RateLimitNotice(redact(str(params.get("message", ""))))
    _log_unknown_once(method)
    return UnknownUpdate(method, params)
