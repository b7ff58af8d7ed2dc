"""One ACP session on a runtime: prompt turns, cancel, modes and models."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from core.acp._dispatch import (
    KIRO_INTERRUPTED,
    dicts,
    event_from_extension,
    event_from_update,
    refusal_from_error,
)
from core.acp.client import (
    AcpError,
    AcpModelUnavailable,
    AcpProcessDied,
    AcpPromptBusy,
    AcpTimeoutError,
    AcpToolGateUnroutable,
)
from core.acp.connection import JsonRpcConnection, Reply
from core.acp.session_handle import AcpRuntimeDead
from core.acp.spec import AgentSpec
from core.acp.thread_failure import ThreadFailure
from core.acp.tool_gate import Approver, decide
from core.acp.types import (
    STOP_REASON_CANCELLED,
    STOP_REASON_END_TURN,
    STOP_REASON_REFUSAL,
    TOOL_STATUS_DENIED,
    AcpEvent,
    AcpPromptStats,
    ConfigOptions,
    KiroMetadata,
    ModeChanged,
    PermissionOption,
    PermissionRequest,
    TextChunk,
    ToolCall,
)
from core.failures import classify

__all__ = ["AcpSession", "EventSink", "SessionRuntime", "prompt_blocks"]

log = logging.getLogger("acp_relay.acp.session")

EventSink = Callable[[AcpEvent], None]


class SessionRuntime(Protocol):
    """What a session uses of the runtime that serves it (``core.acp.runtime.AcpRuntime``), so the
    runtime can make sessions without the two modules importing each other."""

    spec: AgentSpec
    backend: str
    cwd: str
    conn: JsonRpcConnection
    sessions: dict[str, AcpSession]

    @property
    def alive(self) -> bool:
        """The agent process is running."""
        ...

    @property
    def accepts_images(self) -> bool:
        """The agent takes image content blocks."""
        ...

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None,
                      idle_key: str | None = None, models: tuple[str, ...] = ()) -> Any:
        """A request with its own budget; a JSON-RPC error becomes the classified AcpError."""
        ...

    def forget(self, session_id: str) -> None:
        """Stop routing frames to a session."""
        ...
#: Modes in which an agent runs tools without asking: with a gate of ask/deny we leave them.
_BYPASS_MODES = frozenset({"auto", "bypassPermissions", "acceptEdits", "dontAsk", "full-access",
                           "agent-full-access", "yolo", "autoEdit"})
#: A backend's own such modes, whose names mean something else elsewhere. codex-acp 2.x starts in
#: "agent" (auto review): a second model call, not the person, approves or denies each tool call.
_BACKEND_BYPASS_MODES = {"codex": frozenset({"agent"})}
#: Where to go instead, in order of preference (claude: default; codex: read-only).
_ASKING_MODES = ("default", "read-only")
#: ``_meta`` keys of a session/new answer that a later session/load needs back.
_LOAD_META_KEYS = frozenset({"_kiro.dev/session_file"})


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _select_values(options: Any) -> list[dict[str, Any]]:
    """A select's values, flat or grouped under headers (schema: SessionConfigSelectGroup)."""
    flat: list[dict[str, Any]] = []
    for item in dicts(options):
        flat.extend(dicts(item["options"]) if "group" in item and "value" not in item else [item])
    return flat


def _names(entries: list[dict[str, Any]], id_key: str) -> dict[str, str]:
    """Model id -> the readable name the agent gives it (qwen: "$runtime|openai|x(openai)" is "x")."""
    out = {}
    for entry in entries:
        name = entry.get("name")
        if isinstance(name, str) and name.strip() and name.strip() != str(entry.get(id_key)):
            out[str(entry.get(id_key))] = " ".join(name.split())
    return out


def prompt_blocks(prompt: str | Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Text or ready-made content blocks (text, image) -> the ``prompt`` array."""
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt}]
    return [dict(block) for block in prompt]


@dataclass(eq=False)
class _Turn:
    on_event: EventSink | None
    approver: Approver | None
    approval_timeout_s: float
    stats: AcpPromptStats = field(default_factory=AcpPromptStats)
    tools: dict[str, ToolCall] = field(default_factory=dict)
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # ended without a prompt response
    failed: asyncio.Event = field(default_factory=asyncio.Event)  # ``error`` was set on our side
    done: asyncio.Event = field(default_factory=asyncio.Event)  # prompt() has returned or raised
    forced_stop: str = STOP_REASON_END_TURN
    cancel_requested: bool = False
    error: BaseException | None = None
    permission_tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    thread: ThreadFailure = field(default_factory=ThreadFailure)  # codex-acp 2.x's failed turns
    denied: set[str] = field(default_factory=set)  # tool call ids the relay answered with a rejection


class AcpSession:
    """A session handle. One prompt in flight at a time; ``cancel()`` really ends the turn."""

    def __init__(self, runtime: SessionRuntime, session_id: str, result: dict[str, Any], *,
                 loading: bool = False) -> None:
        self.runtime = runtime
        self.session_id = session_id
        self.models: tuple[str, ...] = ()
        self.current_model: str | None = None
        self.model_names: dict[str, str] = {}  # the name the agent gives a model id, where it gives one
        self.model_config_id: str | None = None
        self.modes: tuple[str, ...] = ()
        self.current_mode: str | None = None
        self.replayed = 0
        self.meta: dict[str, Any] = {}
        self.loading = loading
        self.unresponsive = False  # the agent ignored a session/cancel: this session may never be free
        self._turn: _Turn | None = None
        self._read_result(result)

    def _read_result(self, result: dict[str, Any]) -> None:
        if isinstance(result.get("_meta"), dict):
            self.meta = dict(result["_meta"])
        models = result.get("models")
        if isinstance(models, dict):
            self.models = tuple(str(m.get("modelId")) for m in dicts(models.get("availableModels")))
            self.model_names = _names(dicts(models.get("availableModels")), "modelId")
            self.current_model = _str(models.get("currentModelId")) or self.current_model
        self._read_config_options(result.get("configOptions"))
        modes = result.get("modes")
        if isinstance(modes, dict):
            self.modes = tuple(str(m.get("id")) for m in dicts(modes.get("availableModes")))
            self.current_mode = _str(modes.get("currentModeId")) or self.current_mode

    def _read_config_options(self, options: Any) -> None:
        for opt in dicts(list(options) if isinstance(options, tuple) else options):
            if opt.get("category") == "model":
                self.model_config_id = str(opt.get("id"))
                self.models = tuple(str(o.get("value")) for o in _select_values(opt.get("options")))
                self.model_names = _names(_select_values(opt.get("options")), "value")
                self.current_model = _str(opt.get("currentValue")) or self.current_model

    def load_meta(self) -> dict[str, Any]:
        """What ``session/load`` must carry to find this session again (Kiro's session file)."""
        return {k: v for k, v in self.meta.items() if k in _LOAD_META_KEYS}

    def loaded(self, result: dict[str, Any]) -> None:
        """Finish a ``session/load``: read the models, modes and ``_meta`` its answer carries."""
        self.loading = False
        self._read_result(result)

    async def prepare(self) -> None:
        """Leave a mode that would run tools without asking, when the gate must see them."""
        if self.runtime.spec.tool_gate == "allow" or not self._bypasses(self.current_mode):
            return
        target = next((m for m in _ASKING_MODES if m in self.modes), None)
        if target is not None:
            await self.set_mode(target)

    def _bypasses(self, mode_id: str | None) -> bool:
        """True for a mode in which this agent runs tools without asking the person."""
        extra = _BACKEND_BYPASS_MODES.get(self.runtime.backend, frozenset())
        return mode_id in _BYPASS_MODES or mode_id in extra

    @property
    def busy(self) -> bool:
        """A turn is in flight: ``prompt()`` has not returned yet."""
        return self._turn is not None

    # -- frames ----------------------------------------------------------------------------

    def on_frame(self, method: str, params: dict[str, Any]) -> None:
        """Take one notification: track mode and model changes, feed the turn, or count a replayed frame."""
        turn = self._turn
        tools = turn.tools if turn is not None else {}
        if method == "session/update":
            update = params.get("update")
            event = event_from_update(update, tools) if isinstance(update, dict) else None
        elif method.startswith("_"):
            event = event_from_extension(method, params, self.runtime.backend)
        else:
            return  # the runtime logged it (once per method)
        if event is None:
            return
        if isinstance(event, ConfigOptions):
            self._read_config_options(event.options)
        elif isinstance(event, ModeChanged):
            self.current_mode = event.mode_id
        if turn is None:
            self.replayed += 1
            return
        self._on_turn_event(turn, event)

    def _on_turn_event(self, turn: _Turn, event: AcpEvent) -> None:
        stats = turn.stats
        if isinstance(event, ToolCall) and event.tool_call_id in turn.denied and event.status == "failed":
            event = replace(event, status=TOOL_STATUS_DENIED)  # it never ran: it was denied
        kept_back, released = turn.thread.observe(event, len(stats.text), self.runtime.backend)
        if kept_back:  # the failure's text (prompt() raises it), or the agent's own status line
            if (notice := turn.thread.take_notice()) is not None:
                self._emit(turn, notice)
            return
        if released:
            self._on_turn_event(turn, TextChunk(released))
        if isinstance(event, TextChunk):
            if self.runtime.backend == "kiro" and event.text.strip() == KIRO_INTERRUPTED:
                turn.forced_stop = STOP_REASON_CANCELLED if turn.cancel_requested else STOP_REASON_END_TURN
                turn.ended.set()
                return
            stats.text += event.text
            stats.chunks += 1
        elif isinstance(event, ToolCall) and (event.ran or event.status == TOOL_STATUS_DENIED):
            stats.tool_ran = True  # a denied call reached the tool gate: never retried past it
        elif isinstance(event, KiroMetadata):
            stats.context_pct = event.context_pct if event.context_pct is not None else stats.context_pct
            stats.credits = event.credits if event.credits is not None else stats.credits
            stats.turn_ms = event.turn_ms if event.turn_ms is not None else stats.turn_ms
            if event.refusal is not None:
                stats.refusal = event.refusal
        self._emit(turn, event)

    def _emit(self, turn: _Turn, event: AcpEvent) -> None:
        if turn.on_event is None or turn.error is not None:
            return
        try:
            turn.on_event(event)
        except Exception as exc:  # the consumer's failure ends the turn; prompt() re-raises it
            self._fail(turn, exc)

    async def on_permission(self, params: dict[str, Any]) -> dict[str, Any] | Reply:
        """Answer ``session/request_permission`` through the tool gate; cancelled outside a turn or after a stop."""
        turn = self._turn
        if turn is None or turn.cancel_requested:
            return {"outcome": {"outcome": "cancelled"}}
        raw_call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        assert isinstance(raw_call, dict)
        call_id = str(raw_call.get("toolCallId", ""))
        call = (turn.tools.get(call_id) or ToolCall(call_id)).merged(raw_call)
        turn.tools[call_id] = call
        options = tuple(PermissionOption(str(o.get("optionId")), str(o.get("name", "")), str(o.get("kind", "")))
                        for o in params.get("options", []) if isinstance(o, dict))
        request = PermissionRequest(self.session_id, call, options)
        task = asyncio.create_task(decide(self.runtime.spec.tool_gate, request, turn.approver,
                                          timeout_s=turn.approval_timeout_s), name="acp-permission")
        turn.permission_tasks.add(task)
        cancelled = Reply({"outcome": {"outcome": "cancelled"}}, request.answered)
        try:
            kind, answer = await task
        except asyncio.CancelledError:
            if task.cancelled():  # session/cancel (a stop) or the runtime died
                return cancelled
            raise
        except Exception as exc:  # AcpPermissionNeeded (no approver for "ask"), or the approver failed
            self._fail(turn, exc)
            return cancelled
        finally:
            turn.permission_tasks.discard(task)
        if kind.startswith("allow"):
            turn.stats.tool_ran = True
        elif kind.startswith("reject"):
            turn.denied.add(call_id)
        return Reply(answer, request.answered)

    def runtime_died(self, death: AcpRuntimeDead) -> None:
        """Cancel the turn's pending approvals; the prompt request itself fails with the connection."""
        if self._turn is not None:
            for task in self._turn.permission_tasks:
                task.cancel()

    # -- turns -----------------------------------------------------------------------------

    async def prompt(
        self, prompt: str | Sequence[dict[str, Any]], *, on_event: EventSink | None = None,
        approver: Approver | None = None, timeout_s: float = 900.0, approval_timeout_s: float = 300.0,
        cancel_wait_s: float = 10.0,
    ) -> AcpPromptStats:
        """Run one turn. Events reach ``on_event`` in order; the last one is ``TurnEnded``."""
        if self._turn is not None:
            raise AcpPromptBusy("a prompt is already in flight on this session")
        await self.prepare()  # the agent may have switched itself into a mode that skips the gate
        if self._turn is not None:
            raise AcpPromptBusy("a prompt is already in flight on this session")
        turn = _Turn(on_event, approver, approval_timeout_s)
        self._turn = turn
        params = {"sessionId": self.session_id, "prompt": prompt_blocks(prompt)}
        request = asyncio.create_task(
            self.runtime.request("session/prompt", params, timeout_s=0, models=self.models), name="acp-prompt")
        ender = asyncio.create_task(turn.ended.wait(), name="acp-turn-ended")
        failer = asyncio.create_task(turn.failed.wait(), name="acp-turn-failed")
        finished = False
        try:
            done, _ = await asyncio.wait({request, ender, failer}, timeout=timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
            if failer in done and not (request.done() or ender.done()):
                # Our side failed the turn (no approver, a failing consumer) and sent session/cancel:
                # give the agent the cancel wait to end it, never the whole prompt budget.
                await asyncio.wait({request, ender}, timeout=cancel_wait_s, return_when=asyncio.FIRST_COMPLETED)
                self.unresponsive = not (request.done() or ender.done())
                finished = True
                assert turn.error is not None
                raise turn.error
            if not done:
                self._send_cancel(turn)
                await asyncio.wait({request, ender}, timeout=cancel_wait_s, return_when=asyncio.FIRST_COMPLETED)
                self.unresponsive = not (request.done() or ender.done())  # it ignored the cancel too
                finished = True
                raise AcpTimeoutError(f"no answer within {timeout_s:g}s", partial_output=turn.stats.text)
            stop = turn.forced_stop
            if request in done:
                stop = self._stop_reason(request, turn)
            finished = True
            if turn.error is not None:
                raise turn.error
            if turn.thread.failed and stop == STOP_REASON_END_TURN:
                failure = turn.thread.error(turn.stats.text, backend=self.runtime.backend,
                                            advertised_models=self.models)
                if isinstance(failure, AcpError):
                    raise failure
                turn.stats.refusal = failure
            end = turn.stats.terminal_refusal(stop)
            self._emit(turn, end)
            return turn.stats
        finally:
            if not finished and not request.done():
                self._send_cancel(turn)  # our caller went away (e.g. shutdown): end the agent's turn too
            request.cancel()
            ender.cancel()
            failer.cancel()
            self._turn = None
            turn.done.set()

    def _stop_reason(self, request: asyncio.Task[Any], turn: _Turn) -> str:
        try:
            result = request.result()
        except AcpRuntimeDead as exc:
            raise AcpProcessDied(str(exc), exit_code=exc.exit_code, stderr_tail=exc.stderr_tail,
                                 partial_output=turn.stats.text) from exc
        except AcpError as exc:
            if turn.error is not None:
                raise turn.error from exc
            if turn.stats.refusal is not None:  # Kiro: CONTENT_FILTERED metadata, then a bare -32603
                return STOP_REASON_REFUSAL
            if classify(exc, backend=self.runtime.backend).kind == "refusal":
                turn.stats.refusal = refusal_from_error(exc.message)  # declined, not failed
                return STOP_REASON_REFUSAL
            exc.partial_output = turn.stats.text
            raise
        stop = result.get("stopReason") if isinstance(result, dict) else None
        return stop if isinstance(stop, str) and stop else STOP_REASON_END_TURN

    def _fail(self, turn: _Turn, exc: Exception) -> None:
        """End the turn from our side: prompt() raises ``exc`` once the agent ended it (bounded)."""
        turn.error = exc
        turn.failed.set()
        self._send_cancel(turn)

    def _send_cancel(self, turn: _Turn) -> None:
        turn.cancel_requested = True
        for task in turn.permission_tasks:
            task.cancel()
        if not self.runtime.conn.closed:
            self.runtime.conn.notify("session/cancel", {"sessionId": self.session_id})

    async def cancel(self, *, wait_s: float = 10.0) -> None:
        """``session/cancel``, pending approvals answered cancelled; returns once the turn ended."""
        turn = self._turn
        if turn is None:
            return
        self._send_cancel(turn)
        try:
            await asyncio.wait_for(turn.done.wait(), wait_s)
        except TimeoutError:
            log.warning("agent %s did not end the turn %gs after session/cancel; ending it here",
                        self.runtime.spec.name, wait_s)
            self.unresponsive = True
            turn.forced_stop = STOP_REASON_CANCELLED
            turn.ended.set()
            await turn.done.wait()

    # -- modes and models ------------------------------------------------------------------

    async def set_mode(self, mode_id: str) -> None:
        """Switch mode; a gate of ask or deny refuses modes in which tools run without asking."""
        gate = self.runtime.spec.tool_gate
        if gate != "allow" and self._bypasses(mode_id):
            raise AcpToolGateUnroutable(
                f"mode {mode_id!r} lets tools run without asking, but tool_gate is {gate!r}",
                data={"agent": self.runtime.spec.name, "mode": mode_id, "tool_gate": gate})
        await self.runtime.request("session/set_mode", {"sessionId": self.session_id, "modeId": mode_id})
        self.current_mode = mode_id

    def model_label(self, model_id: str | None) -> str | None:
        """What a person reads for a model: the name the agent gives it, else its id."""
        return self.model_names.get(model_id, model_id) if model_id is not None else None

    def model_id(self, chosen: str) -> str:
        """The id of the model a person named, by id or by the name the agent gives it."""
        if chosen in self.models:
            return chosen
        named = [mid for mid, name in self.model_names.items() if name.casefold() == chosen.strip().casefold()]
        return named[0] if len(named) == 1 else chosen

    async def set_model(self, model_id: str) -> None:
        """Switch model: ``session/set_config_option``, else the legacy ``session/set_model``.
        ``model_id`` may also be the name the agent gives the model."""
        model_id = self.model_id(model_id)
        if self.models and model_id not in self.models:
            raise AcpModelUnavailable(f"model {model_id!r} is not offered by this agent",
                                      model=model_id, available=self.models)
        if self.model_config_id is not None:
            try:
                await self.runtime.request("session/set_config_option", {
                    "sessionId": self.session_id, "configId": self.model_config_id, "value": model_id})
            except AcpError as exc:
                if exc.code != -32601:
                    raise
            else:
                self.current_model = model_id
                return
        await self.runtime.request("session/set_model", {"sessionId": self.session_id, "modelId": model_id},
                                   models=self.models)
        self.current_model = model_id
