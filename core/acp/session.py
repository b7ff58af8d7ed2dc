"""One ACP session on a runtime: prompt turns, cancel, modes and models."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from core.acp._dispatch import KIRO_INTERRUPTED, event_from_extension, event_from_update, refusal_from_error
from core.acp.bypass_flags import program_of
from core.acp.client import (
    AcpError,
    AcpModelUnavailable,
    AcpProcessDied,
    AcpPromptBusy,
    AcpTimeoutError,
    AcpToolGateUnroutable,
)
from core.acp.connection import Reply
from core.acp.elicit import CANCEL, Elicitor, ask_person, asked_about
from core.acp.exchange import ElicitationRequest
from core.acp.gate_keeping import GateKeeping
from core.acp.gate_modes import (
    UNASKED_GRACE_S,
    may_run_unasked,
    mode_bypasses,
    ran_unasked,
)
from core.acp.session_handle import AcpRuntimeDead
from core.acp.session_runtime import SessionRuntime
from core.acp.tool_gate import Approver, decide
from core.acp.turn_state import EventSink, first_done
from core.acp.turn_state import TurnState as _Turn
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
    UsageUpdate,
)
from core.failures import classify

__all__ = ["AcpSession", "EventSink", "SessionRuntime", "prompt_blocks"]

log = logging.getLogger("acp_relay.acp.session")


def prompt_blocks(prompt: str | Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Text or ready-made content blocks (text, image) -> the ``prompt`` array."""
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt}]
    return [dict(block) for block in prompt]


class AcpSession(GateKeeping):
    """A session handle. One prompt in flight at a time; ``cancel()`` really ends the turn."""

    def __init__(self, runtime: SessionRuntime, session_id: str, result: dict[str, Any], *,
                 loading: bool = False) -> None:
        super().__init__(runtime, session_id)
        #: Tool calls a permission request came for (made by the first: most sessions never have one).
        self._asked: set[str] | None = None
        self.replayed = 0
        self.loading = loading
        self.unresponsive = False  # the agent ignored a session/cancel: this session may never be free
        #: When a turn or a switch last used it: the runtime lets a session idle past ``idle_s`` go.
        self.last_used = time.monotonic()
        #: The share of the context window in use, in percent, as the agent last said in a turn (Kiro's
        #: metadata or ACP's usage_update); None until it says. Computed here only.
        self.context_pct: float | None = None
        self._turn: _Turn | None = None
        self._read_result(result)

    def loaded(self, result: dict[str, Any]) -> None:
        """Finish a ``session/load``: read the models, modes and ``_meta`` its answer carries."""
        self.loading = False
        self.last_used = time.monotonic()
        self._read_result(result)

    def _watch(self, turn: _Turn) -> None:
        """The agent switched its mode or options mid-turn: switch back at once, or refuse the turn."""
        if self.runtime.spec.tool_gate == "allow" or turn.restoring is not None or not self._bypassed():
            return

        async def restore() -> None:
            try:
                await self.prepare(reason="switched")
            except AcpError as exc:
                self._fail(turn, exc)
            finally:
                turn.restoring = None
            if self._bypassed() and not turn.cancel_requested:
                self._watch(turn)  # it switched again while we were switching back

        turn.restoring = asyncio.create_task(restore(), name="acp-gate-restore")

    def _note_asked(self, call_id: str) -> None:
        self._asked = self._asked or set()
        self._asked.add(call_id)

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
        self.note(event)
        if isinstance(event, ConfigOptions):
            self._read_config_options(event.options)
        elif isinstance(event, ModeChanged):
            self.current_mode = event.mode_id
        if turn is None:
            self.replayed += 1
            if isinstance(event, ConfigOptions | ModeChanged):
                self._watch_between()
            return
        self._on_turn_event(turn, event)
        if isinstance(event, ConfigOptions | ModeChanged):
            self._watch(turn)

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
            if event.ran and turn.error is None and self.runtime.spec.tool_gate != "allow":
                asked = event.tool_call_id in (self._asked or ())
                if ran_unasked(event, asked):
                    self._emit(turn, event)  # the tool line shows what ran; then the turn stops
                    self._fail(turn, self._ran_unasked(event))
                    return
                if may_run_unasked(event, asked) and event.tool_call_id not in turn.unasked:
                    turn.unasked[event.tool_call_id] = asyncio.get_running_loop().call_later(
                        UNASKED_GRACE_S, self._still_unasked, turn, event.tool_call_id)
        elif isinstance(event, UsageUpdate) and (pct := event.context_pct) is not None:
            self.context_pct = stats.context_pct = pct
        elif isinstance(event, KiroMetadata):
            if (pct := event.context_pct) is not None:
                self.context_pct = stats.context_pct = pct
            stats.credits = event.credits if event.credits is not None else stats.credits
            stats.turn_ms = event.turn_ms if event.turn_ms is not None else stats.turn_ms
            if event.refusal is not None:
                stats.refusal = event.refusal
        self._emit(turn, event)

    def _still_unasked(self, turn: _Turn, call_id: str) -> None:
        """A call marked in_progress was never asked for: it runs without the person's say."""
        turn.unasked.pop(call_id, None)
        asked = call_id in (self._asked or ())
        if self._turn is turn and turn.error is None and not turn.cancel_requested and not asked:
            self._fail(turn, self._ran_unasked(turn.tools.get(call_id) or ToolCall(call_id)))

    def _ran_unasked(self, call: ToolCall) -> AcpToolGateUnroutable:
        spec = self.runtime.spec
        program, _ = program_of(spec.command, spec.args, self.runtime.backend, self.runtime.agent_name)
        data = {"agent": spec.name, "tool_gate": spec.tool_gate, "tool": call.display or call.tool_call_id,
                "kind": call.kind or "other", "program": program, "reason": "ran_unasked"}
        log.warning("agent %s ran a %s tool call without asking; turn stopped", spec.name, data["kind"])
        return AcpToolGateUnroutable("a tool call ran without a permission request", data=data)

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
        self._note_asked(call_id)
        if (waiting := turn.unasked.pop(call_id, None)) is not None:
            waiting.cancel()
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

    async def on_elicitation(self, params: dict[str, Any]) -> dict[str, Any] | Reply:
        """Answer ``elicitation/create`` (the person's answer, else declined); cancelled outside a turn."""
        turn = self._turn
        if turn is None or turn.cancel_requested:
            return dict(CANCEL)
        request = ElicitationRequest.of(params)
        if (call_id := asked_about(params, turn.tools)) and (waiting := turn.unasked.pop(call_id, None)):
            waiting.cancel()  # the form is that call's question (claude's AskUserQuestion): it was asked
        if call_id:
            self._note_asked(call_id)
        if request.mode == "url" and request.elicitation_id:
            turn.links[request.elicitation_id] = request
        task = asyncio.create_task(ask_person(request, turn.elicitor, timeout_s=turn.approval_timeout_s),
                                   name="acp-elicitation")
        turn.permission_tasks.add(task)  # a stop or the agent's death cancels it with the approvals
        task.add_done_callback(turn.permission_tasks.discard)
        try:
            return Reply(await task, request.answered)
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
            return Reply(dict(CANCEL), request.answered)
        finally:
            turn.links.pop(request.elicitation_id, None)

    def elicitation_completed(self, elicitation_id: str) -> bool:
        """``elicitation/complete``: the link with that id was followed through; False when this session
        is not asking it (answered already, or another session's)."""
        turn = self._turn
        request = turn.links.get(elicitation_id) if turn is not None else None
        if request is None:
            return False
        request.completed.set()
        return True

    async def steer(self, prompt: str | Sequence[dict[str, Any]]) -> str:
        """``_session/steering``: add ``prompt`` to the running turn; the outcome (``injected``...)."""
        result = await self.runtime.request("_session/steering", {"sessionId": self.session_id,
                                                                   "prompt": prompt_blocks(prompt)})
        return str(result.get("outcome") or "failed") if isinstance(result, dict) else "failed"

    def runtime_died(self, death: AcpRuntimeDead) -> None:
        """Cancel the turn's pending approvals; the prompt request itself fails with the connection."""
        if self._turn is not None:
            for task in self._turn.permission_tasks:
                task.cancel()

    # -- turns -----------------------------------------------------------------------------

    async def prompt(
        self, prompt: str | Sequence[dict[str, Any]], *, on_event: EventSink | None = None,
        approver: Approver | None = None, timeout_s: float = 900.0, approval_timeout_s: float = 300.0,
        cancel_wait_s: float = 10.0, elicitor: Elicitor | None = None,
    ) -> AcpPromptStats:
        """Run one turn. Events reach ``on_event`` in order; the last one is ``TurnEnded``. ``elicitor``
        answers the agent's questions (None: they are declined)."""
        self.last_used = time.monotonic()  # before any wait: the idle sweep must not take it from now on
        if self._turn is not None:
            raise AcpPromptBusy("a prompt is already in flight on this session")
        if (restoring := self._restoring) is not None:
            await asyncio.wait({restoring}, timeout=cancel_wait_s)
        await self.prepare()  # the agent may have switched itself into a mode that skips the gate
        if self._turn is not None:
            raise AcpPromptBusy("a prompt is already in flight on this session")
        turn = _Turn(on_event, approver, approval_timeout_s, elicitor)
        params = {"sessionId": self.session_id, "prompt": prompt_blocks(prompt)}
        # The prompt is written now, and its answer waited on beside the turn's signals: no task per
        # turn for any of them (a burst of first turns pays for every task before its first text).
        # Nothing is read from the agent before the next wait: its frames find the turn set.
        request_id, answer = self.runtime.send_request("session/prompt", params)
        self._turn = turn
        ended, failed = turn.ended.future, turn.failed.future
        finished = False
        try:
            await self.runtime.conn.drained(answer)
            done = await first_done((answer, ended, failed), timeout_s)
            if failed in done and not (answer.done() or ended.done()):
                # Our side failed the turn (no approver, a failing consumer) and sent session/cancel:
                # give the agent the cancel wait to end it, never the whole prompt budget.
                await asyncio.wait({answer, ended}, timeout=cancel_wait_s, return_when=asyncio.FIRST_COMPLETED)
                self.unresponsive = not (answer.done() or ended.done())
                finished = True
                assert turn.error is not None
                raise turn.error
            if not done:
                self._send_cancel(turn)
                await asyncio.wait({answer, ended}, timeout=cancel_wait_s, return_when=asyncio.FIRST_COMPLETED)
                self.unresponsive = not (answer.done() or ended.done())  # it ignored the cancel too
                finished = True
                raise AcpTimeoutError(f"no answer within {timeout_s:g}s", partial_output=turn.stats.text)
            stop = turn.forced_stop
            if answer in done:
                stop = self._stop_reason(answer, turn)
            if turn.restoring is not None:  # a switch back to asking still under way ends first
                await asyncio.wait({turn.restoring}, timeout=cancel_wait_s)
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
            if not finished and not answer.done():
                self._send_cancel(turn)  # our caller went away (e.g. shutdown): end the agent's turn too
            self.runtime.conn.forget(request_id)
            if not answer.cancel() and not answer.cancelled():
                answer.exception()  # read: a failure that came too late to matter is not logged as unread
            if turn.restoring is not None:
                turn.restoring.cancel()
            for waiting in turn.unasked.values():
                waiting.cancel()
            self._turn = None
            self.last_used = time.monotonic()
            turn.done.set()

    def _stop_reason(self, answer: asyncio.Future[Any], turn: _Turn) -> str:
        try:
            result = self.runtime.answer(answer, models=self.models)
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
        if gate != "allow" and mode_bypasses(mode_id, self.runtime.backend):
            raise AcpToolGateUnroutable(
                f"mode {mode_id!r} lets tools run without asking, but tool_gate is {gate!r}",
                data={"agent": self.runtime.spec.name, "mode": mode_id, "tool_gate": gate, "reason": "requested"})
        self.last_used = time.monotonic()
        await self.runtime.request("session/set_mode", {"sessionId": self.session_id, "modeId": mode_id})
        self.current_mode = mode_id

    async def set_model(self, model_id: str) -> None:
        """Switch model: ``session/set_config_option``, else the legacy ``session/set_model``.
        ``model_id`` may also be the name the agent gives the model."""
        model_id = self.model_id(model_id)
        if self.models and model_id not in self.models:
            raise AcpModelUnavailable(f"model {model_id!r} is not offered by this agent",
                                      model=model_id, available=self.models)
        self.last_used = time.monotonic()
        if self.model_config_id is not None:
            try:
                await self.runtime.request("session/set_config_option", {
                    "sessionId": self.session_id, "configId": self.model_config_id, "value": model_id})
            except AcpError as exc:
                if exc.rpc_code != -32601:
                    raise
            else:
                self.current_model = model_id
                return
        await self.runtime.request("session/set_model", {"sessionId": self.session_id, "modelId": model_id},
                                   models=self.models)
        self.current_model = model_id
