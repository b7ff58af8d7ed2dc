"""Typed values shared by the ACP layer and the engine: events, refusals, turn statistics."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

from core.acp.exchange import FileDiff, SharedFile, tool_exchange

__all__ = [
    "STOP_REASON_CANCELLED",
    "STOP_REASON_END_TURN",
    "STOP_REASON_REFUSAL",
    "THREAD_SYSTEM_ERROR",
    "TOOL_STATUS_DENIED",
    "AcpEvent",
    "AcpPromptStats",
    "AgentNotice",
    "AvailableCommands",
    "CompactionStatus",
    "ConfigOptions",
    "Cost",
    "FileShared",
    "KiroMetadata",
    "ModeChanged",
    "Notice",
    "PermissionOption",
    "PermissionRequest",
    "PlanEntry",
    "PlanUpdate",
    "RateLimitNotice",
    "RefusalInfo",
    "SessionInfo",
    "TextChunk",
    "ThoughtChunk",
    "ToolCall",
    "TurnEnded",
    "UnknownUpdate",
    "UsageUpdate",
    "UserChunk",
]

STOP_REASON_END_TURN = "end_turn"
STOP_REASON_REFUSAL = "refusal"
STOP_REASON_CANCELLED = "cancelled"
#: A tool call the relay answered with a rejection (the person's, or the gate's): the agent reports
#: it "failed", which reads as if it had run and broken.
TOOL_STATUS_DENIED = "denied"


@dataclass(frozen=True, slots=True)
class RefusalInfo:
    """The one shape every harness's refusal is folded onto. Empty means "the provider did not say"."""

    category: str = ""
    explanation: str = ""
    recommended_model: str = ""


@dataclass(frozen=True, slots=True)
class AcpEvent:
    """Base of everything a turn streams to its consumer."""


@dataclass(frozen=True, slots=True)
class TextChunk(AcpEvent):
    """A piece of the agent's answer (``agent_message_chunk``)."""

    text: str


@dataclass(frozen=True, slots=True)
class ThoughtChunk(AcpEvent):
    """A piece of the agent's reasoning (``agent_thought_chunk``), shown apart from the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class UserChunk(AcpEvent):
    """History replayed by ``session/load``."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall(AcpEvent):
    """Merged state of one tool call. ``started`` is true for the ``tool_call`` frame itself.

    ``detail`` is what will run, from ``rawInput`` or ``locations``: the command, else the path, else
    the URL. ``display`` is the one line a person is shown (see there).
    """

    tool_call_id: str
    title: str = ""
    kind: str = ""
    status: str = "pending"
    content: tuple[str, ...] = ()
    started: bool = False
    detail: str = ""
    #: The edits the call reports (``diff`` content) and the files it shares, as last reported.
    diffs: tuple[FileDiff, ...] = ()
    files: tuple[SharedFile, ...] = ()

    @property
    def ran(self) -> bool:
        """The tool is running or has run (a retry could repeat what it did)."""
        return self.status in ("in_progress", "completed", "failed")

    @property
    def display(self) -> str:
        """The most specific line: the title when it shows the detail (or there is none), else both.

        Copilot CLI asks with the title "Running command" and the command only in ``rawInput``:
        that reads "Running command: ls -la".
        """
        title, detail = _squash(self.title), _squash(self.detail)
        if not detail or detail in title:
            return title or detail
        return f"{title}: {detail}" if title else detail

    def merged(self, update: dict[str, Any]) -> ToolCall:
        """Apply a ``tool_call_update`` (or a permission request's ``toolCall``): missing fields stay
        unchanged, and a title that says less than the one shown (a generic "Running command" after
        "ls -la") does not replace it."""
        changes: dict[str, Any] = {"started": False}
        for key in ("kind", "status"):
            if isinstance(update.get(key), str):
                changes[key] = update[key]
        detail = _detail(update) or self.detail
        if detail != self.detail:
            changes["detail"] = detail
        title = update.get("title")
        if isinstance(title, str) and _specificity(title, detail) >= _specificity(self.title, detail):
            changes["title"] = title
        texts = _content_texts(update.get("content"))
        if texts:
            changes["content"] = texts
        diffs, files = tool_exchange(update.get("content"))
        if diffs:
            changes["diffs"] = diffs
        if files:
            changes["files"] = files
        return replace(self, **changes)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _specificity(title: str, detail: str) -> int:
    """0 for no title, 2 for one that shows what runs, 1 for one that only names the tool."""
    title = _squash(title)
    if not title:
        return 0
    return 2 if not detail or _squash(detail) in title else 1


#: ``rawInput`` keys naming what a tool call acts on, most specific first.
_COMMAND_KEYS = ("command", "cmd")
_TARGET_KEYS = ("path", "file_path", "filePath", "notebook_path", "abs_path", "url", "uri")


def _detail(update: dict[str, Any]) -> str:
    """The command, else the path or URL, of a tool call: from ``rawInput``, else from ``locations``."""
    raw = update.get("rawInput")
    if isinstance(raw, dict):
        for key in (*_COMMAND_KEYS, *_TARGET_KEYS):
            value = raw.get(key)
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                value = " ".join(value)  # codex: the command as argv
            if isinstance(value, str) and value.strip():
                return value.strip()
    locations = update.get("locations")
    if isinstance(locations, list):
        for location in locations:
            if isinstance(location, dict) and isinstance(location.get("path"), str) and location["path"].strip():
                return str(location["path"]).strip()
    return ""


def _content_texts(content: Any) -> tuple[str, ...]:
    out: list[str] = []
    if isinstance(content, list):
        for item in content:
            if not isinstance(item, dict):
                continue
            inner = item.get("content")
            if isinstance(inner, dict) and isinstance(inner.get("text"), str):
                out.append(inner["text"])
            elif isinstance(item.get("text"), str):
                out.append(item["text"])
    return tuple(out)


@dataclass(frozen=True, slots=True)
class FileShared(AcpEvent):
    """The agent's message carried a file (``resource_link``, ``resource`` or ``image`` content)."""

    file: SharedFile


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """One step of the agent's plan."""

    content: str
    status: str = "pending"
    priority: str = "medium"


@dataclass(frozen=True, slots=True)
class PlanUpdate(AcpEvent):
    """The whole plan (each update replaces the previous one)."""

    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True, slots=True)
class AvailableCommands(AcpEvent):
    """The slash commands the agent offers (``available_commands_update``); ``descriptions`` line up
    with ``names`` ("" where the agent gave none)."""

    names: tuple[str, ...]
    descriptions: tuple[str, ...] = ()

    def described(self) -> tuple[tuple[str, str], ...]:
        """(name, description) of each command."""
        return tuple((name, self.descriptions[i] if i < len(self.descriptions) else "")
                     for i, name in enumerate(self.names))


@dataclass(frozen=True, slots=True)
class ModeChanged(AcpEvent):
    """The agent switched the session's mode (``current_mode_update``)."""

    mode_id: str


@dataclass(frozen=True, slots=True)
class ConfigOptions(AcpEvent):
    """The session's config options, its model choice included (``config_option_update``)."""

    options: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Cost:
    """What a session has cost so far, in ``currency`` (an ISO 4217 code, or a unit such as "credits")."""

    amount: float
    currency: str


@dataclass(frozen=True, slots=True)
class UsageUpdate(AcpEvent):
    """Context window use in tokens (``usage_update``), and the session's cumulative ``cost`` when the
    agent reports it; None where the agent did not say."""

    used: int | None = None
    size: int | None = None
    cost: Cost | None = None

    @property
    def context_pct(self) -> float | None:
        """The share of the context window in use, in percent (None when the size is unknown)."""
        return 100.0 * self.used / self.size if self.used is not None and self.size else None


#: codex-acp 2.x's thread status for a turn whose model call failed (``_meta.codex.threadStatus``).
THREAD_SYSTEM_ERROR = "systemError"


@dataclass(frozen=True, slots=True)
class SessionInfo(AcpEvent):
    """Session metadata (``session_info_update``): its title, and the agent's own thread status
    when it sends one (codex-acp 2.x: ``active``, ``idle``, ``systemError``)."""

    title: str = ""
    status: str = ""


@dataclass(frozen=True, slots=True)
class CompactionStatus(AcpEvent):
    """``compaction_update`` / ``compaction_summary_chunk`` or Kiro's ``_kiro.dev/compaction/status``."""

    status: str
    text: str = ""


@dataclass(frozen=True, slots=True)
class KiroMetadata(AcpEvent):
    """Kiro's ``_kiro.dev/metadata``: context use, credits, turn time and a structured refusal."""

    context_pct: float | None = None
    credits: float | None = None
    turn_ms: int | None = None
    refusal: RefusalInfo | None = None


@dataclass(frozen=True, slots=True)
class RateLimitNotice(AcpEvent):
    """The agent hit a rate limit (Kiro's ``_kiro.dev/error/rate_limit``); the message is redacted."""

    message: str


@dataclass(frozen=True, slots=True)
class Notice(AcpEvent):
    """A line for the person from the core itself (retrying, new session...)."""

    text: str
    key: str = ""


@dataclass(frozen=True, slots=True)
class AgentNotice(AcpEvent):
    """A notice from the agent (``notice``, sent to clients that advertise ``session.notices``):
    ``severity`` info, warning, error (or another word), a ``title`` and an optional ``description``.
    Untrusted text, shown as one notice line."""

    severity: str
    title: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class UnknownUpdate(AcpEvent):
    """An update kind or extension this relay does not model, kept raw."""

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnEnded(AcpEvent):
    """The terminal event of a turn; ``refusal`` is attached by ``AcpPromptStats.terminal_refusal``."""

    stop_reason: str
    refusal: RefusalInfo | None = None


@dataclass(frozen=True, slots=True)
class PermissionOption:
    """One choice of a permission request; ``kind`` is ACP's (``allow_once``, ``reject_once``...)."""

    option_id: str
    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """An agent's ``session/request_permission``. ``answered`` is set once our answer is written."""

    session_id: str
    tool_call: ToolCall
    options: tuple[PermissionOption, ...]
    answered: asyncio.Event = field(default_factory=asyncio.Event, compare=False, repr=False)

    def option_for(self, kind: str) -> PermissionOption | None:
        """The first option of this ``kind``, or None when the agent offers none."""
        return next((o for o in self.options if o.kind == kind), None)


@dataclass(slots=True)
class AcpPromptStats:
    """What one turn produced. ``text`` is the streamed answer (also the partial output)."""

    stop_reason: str = ""
    text: str = ""
    tool_ran: bool = False
    refusal: RefusalInfo | None = None
    context_pct: float | None = None
    credits: float | None = None
    turn_ms: int | None = None
    chunks: int = 0

    @property
    def empty(self) -> bool:
        """The turn ended normally yet produced nothing at all: no text, no tool, no refusal.

        claude-agent-acp 0.23 answers a prompt retried after a failed model call like this, although
        the model call failed again; it is never a silent success.
        """
        return (not self.text.strip() and not self.tool_ran and self.refusal is None
                and self.stop_reason not in (STOP_REASON_CANCELLED, STOP_REASON_REFUSAL))

    def terminal_refusal(self, stop_reason: str) -> TurnEnded:
        """The turn's terminal event: a parsed structured refusal rewrites the stop reason."""
        if self.refusal is not None:
            self.stop_reason = STOP_REASON_REFUSAL
            return TurnEnded(STOP_REASON_REFUSAL, self.refusal)
        self.stop_reason = stop_reason
        if stop_reason == STOP_REASON_REFUSAL:
            return TurnEnded(STOP_REASON_REFUSAL, RefusalInfo())
        return TurnEnded(stop_reason)
