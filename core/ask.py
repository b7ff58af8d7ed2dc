"""``acp-relay ask``: one prompt from the terminal, streamed to stdout.

The boundary of the spec: AcpError -> the friendly message on stderr, exit 1, never a traceback;
on timeout the partial output (already streamed) then the message; Ctrl-C sends session/cancel,
waits for the agent to end the turn, exits 130 (also while the approval question waits for an answer).
A turn that produced nothing is never a silent success: the first says so on stderr (exit 1); one
answering a retry is the failure it retried again (the ladder goes on, or its prose when spent).
A turn that ends with nothing after a denied tool call says so (exit 0: it did what was asked).
Each tool call is one ``[tool]`` line on stderr, written when it ends (or when the turn does).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TextIO

from core.acp.client import AcpError
from core.acp.error_text import is_echo
from core.acp.runtime import AcpRuntime
from core.acp.session import AcpSession
from core.acp.session_handle import AcpRuntimeError
from core.acp.spec import AgentSpec
from core.acp.tool_gate import Approver
from core.acp.types import (
    STOP_REASON_REFUSAL,
    TOOL_STATUS_DENIED,
    AcpEvent,
    AcpPromptStats,
    Notice,
    PermissionRequest,
    RefusalInfo,
    TextChunk,
    ToolCall,
    TurnEnded,
)
from core.engine import wording
from core.engine.approvals import scope_key
from core.engine.wording import refusal_card_text
from core.failures import AGENTS_THAT_RETRY, describe
from core.retry import Attempt, RetryPolicy, with_retries

__all__ = ["EXIT_INTERRUPTED", "run_ask"]

EXIT_INTERRUPTED = 130
_FINAL = frozenset({"completed", "failed", "cancelled", TOOL_STATUS_DENIED})


class _Printer:
    """Streams the answer to stdout. A lone first chunk is held back until a second one arrives or
    the turn ends: claude-agent-acp and codex-acp stream an error's text just before the error, and
    the person should read it once (as the message on stderr), not twice."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.wrote_text = False  # anything on stdout at all (for the closing newline)
        self.text: list[str] = []
        self.held = ""
        self.shown = False  # this attempt's text is on stdout
        self.tool_ran = False
        self.gate_allows_all = False  # tool_gate "allow": a tool call that starts may already be running
        self.end: TurnEnded | None = None
        self.tools: dict[str, ToolCall] = {}  # this turn's tool calls, by id, until their line is written
        self.denied = False
        self.told_retrying = False
        self.written: set[str] = set()

    def new_attempt(self) -> None:
        self.held, self.shown, self.text, self.tool_ran = "", False, [], False

    def tool_lines(self) -> None:
        """One line for each tool call not written yet (the turn ended before they did)."""
        for call in self.tools.values():
            self._tool_line(call)
        self.tools.clear()

    def _tool_line(self, call: ToolCall) -> None:
        self.err.write(f"[tool] {call.display or call.kind} ({call.status})\n")

    @property
    def produced(self) -> bool:
        """This attempt showed text or ran a tool: retrying it could repeat what it did."""
        return self.shown or bool(self.held) or self.tool_ran

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        self.shown = self.wrote_text = True

    def release(self) -> None:
        if self.held:
            self._write(self.held)
            self.held = ""

    def drop_echo(self, error: BaseException) -> None:
        """Forget a held chunk that only repeats ``error``; otherwise show what was held."""
        if self.held and not self.shown and is_echo(self.held, error):
            self.held, self.text = "", []
        self.release()

    def __call__(self, event: AcpEvent) -> None:
        if isinstance(event, TextChunk):
            if not event.text:
                return
            self.text.append(event.text)
            if self.shown:
                self._write(event.text)
            elif self.held:
                self.held, held = "", self.held
                self._write(held + event.text)
            else:
                self.held = event.text
        elif isinstance(event, ToolCall):
            self.tool_ran = self.tool_ran or event.ran or (event.started and self.gate_allows_all)
            self.denied = self.denied or event.status == TOOL_STATUS_DENIED
            self.tool_ran = self.tool_ran or self.denied  # never retried past a tool call
            # claude-code-acp sends tool_call twice for one call: one line per call, once it ends
            if event.status in _FINAL and event.tool_call_id not in self.written:
                self.tools.pop(event.tool_call_id, None)
                self.written.add(event.tool_call_id)
                self._tool_line(event)
            elif event.tool_call_id not in self.written:
                self.tools[event.tool_call_id] = event
        elif isinstance(event, Notice) and event.key == "agent-retry" and not self.told_retrying:
            self.told_retrying = True  # Copilot CLI said it is retrying a failed model call
            self.err.write(wording.agent_retrying(0) + "\n")
        elif isinstance(event, TurnEnded):
            self.tool_lines()
            self.end = event


async def _read_answer(fd: int) -> str:
    """One line typed on ``fd``, read on the event loop (no thread): cancelling this really stops it,
    so Ctrl-C and the approval timeout do not wait for Enter. End of input or an error reads as ""."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not answer.done():
            answer.set_result(data.decode(errors="replace"))

    loop.add_reader(fd, readable)
    try:
        return await answer
    finally:
        loop.remove_reader(fd)


def _terminal_approver(err: TextIO, fd: int, printer: _Printer) -> Approver:
    allowed: set[tuple[str, str, str]] = set()  # "allow for this session": the same command or target only

    async def approve(request: PermissionRequest) -> str:
        """Ask on the terminal: y = allow once, a = allow this command (or target) for this session,
        anything else = deny."""
        key = scope_key(request)
        if key is not None and key in allowed:
            printer.tool_ran = True
            return "allow_once"
        call = request.tool_call
        always = f", a = allow `{key[2]}` for this session" if key else ""
        err.write(f"Allow tool call: {call.display or call.kind}? (y = once{always}) [y/a/N] "
                  if always else f"Allow tool call: {call.display or call.kind}? [y/N] ")
        err.flush()
        try:
            answer = await _read_answer(fd)
        except asyncio.CancelledError:  # stopped, or no answer in time: end the question's line
            err.write("\n")
            err.flush()
            raise
        kind = {"y": "allow_once", "a": "allow_always"}.get(answer.strip().lower()[:1], "reject_once")
        printer.tool_ran = printer.tool_ran or kind.startswith("allow")  # never retried past this
        if kind == "allow_always" and key is not None:
            allowed.add(key)
        return kind

    return approve


async def run_ask(spec: AgentSpec, prompt: str, *, timeout_s: float, request_timeout_s: float,
                  approval_s: float, policy: RetryPolicy, out: TextIO = sys.stdout,
                  err: TextIO = sys.stderr) -> int:
    """Send one prompt and stream the answer; returns the exit code (0, 1, or 130 after Ctrl-C)."""
    printer = _Printer(out, err)
    printer.gate_allows_all = spec.tool_gate == "allow"
    approver = _terminal_approver(err, sys.stdin.fileno(), printer) if sys.stdin.isatty() else None
    runtime: AcpRuntime | None = None
    session: AcpSession | None = None
    interrupted = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, interrupted.set)
    last_failure: AcpError | AcpRuntimeError | None = None  # what the ladder is retrying

    async def attempt(state: Attempt) -> AcpPromptStats:
        nonlocal runtime, session
        if runtime is None or not runtime.alive:
            if runtime is not None:
                await runtime.close()  # a dead or wedged process is stopped, never left behind
            runtime = await AcpRuntime.start(spec, request_timeout_s=request_timeout_s)
            session = await runtime.new_session()
        assert session is not None
        state.reached_agent = True
        printer.new_attempt()
        try:
            stats = await session.prompt(prompt, on_event=printer, approver=approver, timeout_s=timeout_s,
                                         approval_timeout_s=approval_s)
        except AcpError as exc:
            printer.drop_echo(exc)
            raise
        finally:
            state.side_effects = printer.produced
        printer.release()
        if stats.empty and last_failure is not None:
            raise last_failure  # an empty answer to a retry is that failure again (claude-agent-acp 0.23)
        return stats

    async def on_retry(state: Attempt, delay: float, exc: BaseException) -> None:
        nonlocal last_failure
        if isinstance(exc, AcpError | AcpRuntimeError):
            last_failure = exc
        err.write(f"{describe(exc, backend=spec.backend or 'generic').prose} "
                  f"(retrying in {delay:.0f}s)\n")

    def retries_itself() -> bool:
        return runtime is not None and runtime.backend in AGENTS_THAT_RETRY

    turn = asyncio.create_task(with_retries(attempt, policy=policy, on_retry=on_retry,
                                            agent_retries=retries_itself), name="ask-turn")
    stop = asyncio.create_task(interrupted.wait(), name="ask-interrupt")
    try:
        await asyncio.wait({turn, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not turn.done():
            if session is not None:
                await session.cancel(wait_s=5.0)
            turn.cancel()
            await asyncio.wait({turn})
            printer.release()
            printer.tool_lines()
            _newline(out, printer)
            err.write(wording.STOPPED + "\n")
            return EXIT_INTERRUPTED
        try:
            stats = turn.result()
        except (AcpError, AcpRuntimeError) as exc:  # anything else is our bug: cli.main logs it once
            printer.tool_lines()
            _newline(out, printer)
            backend = runtime.backend if runtime is not None else spec.backend or "generic"
            err.write(describe(exc, backend=backend).prose + "\n")
            return 1
        _newline(out, printer)
        if printer.end is not None and printer.end.stop_reason == STOP_REASON_REFUSAL:
            err.write(refusal_card_text(printer.end.refusal or RefusalInfo(), streamed="".join(printer.text)) + "\n")
            return 1
        if printer.denied and not "".join(printer.text).strip():
            err.write(wording.TOOL_DENIED + "\n")  # the person's own choice: not a failure
            return 0
        if stats.empty:  # never a silent success: the person is told, and a script sees exit 1
            err.write(wording.EMPTY_ANSWER + "\n")
            return 1
        return 0
    finally:
        stop.cancel()
        loop.remove_signal_handler(signal.SIGINT)
        if runtime is not None:
            await runtime.close()


def _newline(out: TextIO, printer: _Printer) -> None:
    if printer.wrote_text:
        out.write("\n")
        out.flush()
