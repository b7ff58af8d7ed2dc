"""``acp-relay ask``: one prompt from the terminal, answered by the same Engine and turn as every chat.

The terminal is a surface (``core.terminal``) on an engine of its own with an in-memory store, so
``ask`` has the relay's one retry ladder, its patience notices, its tool gate and its "allow for this
session" scope. The whole argument is the prompt (never read as a command).

The boundary of the spec: AcpError -> the friendly message on stderr, exit 1, never a traceback;
on timeout the partial output (already streamed) then the message; Ctrl-C stops the turn as a stop
command does (session/cancel, waiting for the agent to end it), says so and exits 130 (also while
the approval question waits for an answer). A turn that produced nothing is never a silent success:
it says so on stderr (exit 1); a refusal shows its card (exit 1); a turn that ends with nothing after
a denied tool call says so (exit 0: it did what was asked).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any, TextIO

from core.acp.pool import RuntimePool
from core.acp.spec import AgentSpec
from core.config import AgentConfig, RelayConfig, RetryConfig, TimeoutsConfig
from core.engine import wording
from core.engine.conversation import Conversation
from core.engine.engine import Engine
from core.engine.messages import InboundMessage
from core.engine.reply import TurnOutcome
from core.retry import RetryPolicy
from core.store import Store
from core.terminal import TerminalReplies, TerminalSurface

__all__ = ["EXIT_INTERRUPTED", "exit_code", "run_ask"]

EXIT_INTERRUPTED = 130
#: How long a stop waits for the agent to end the turn after session/cancel.
_CANCEL_WAIT_S = 5.0
_KEY = "terminal:ask"
_USER = "terminal"


def exit_code(outcome: TurnOutcome) -> int:
    """0 for an answer (or a tool call the person denied, after which the agent said nothing); 1 for a
    failure, a refusal, or a turn that produced nothing at all."""
    if outcome.failure is not None or outcome.refused:
        return 1
    if outcome.denied and not outcome.text.strip():
        return 0
    return 1 if outcome.empty else 0


def _config(spec: AgentSpec, *, timeout_s: float, request_timeout_s: float, approval_s: float,
            policy: RetryPolicy) -> RelayConfig:
    """The engine's config: this one agent, as ``spec`` says, and the knobs ``ask`` was given."""
    agent = AgentConfig.model_validate({"command": spec.command, "args": list(spec.args), "env": dict(spec.env),
                                        "cwd": spec.cwd, "backend": spec.backend or None, "tool_gate": spec.tool_gate})
    return RelayConfig(
        agents={spec.name: agent}, default_agent=spec.name,
        timeouts=TimeoutsConfig(prompt_s=timeout_s, request_s=request_timeout_s, approval_s=approval_s),
        retry=RetryConfig(attempts=policy.attempts, budget_s=policy.budget_s, base_delay_s=policy.base_delay_s))


async def run_ask(spec: AgentSpec, prompt: str, *, timeout_s: float, request_timeout_s: float,
                  approval_s: float, policy: RetryPolicy, out: TextIO = sys.stdout,
                  err: TextIO = sys.stderr) -> int:
    """Send one prompt and stream the answer; returns the exit code (0, 1, or 130 after Ctrl-C)."""
    config = _config(spec, timeout_s=timeout_s, request_timeout_s=request_timeout_s, approval_s=approval_s,
                     policy=policy)
    replies = TerminalReplies(out, err, answer_fd=sys.stdin.fileno() if sys.stdin.isatty() else None)
    surface = TerminalSurface(err)
    interrupted = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, interrupted.set)
    store = Store.open(":memory:")
    pool = RuntimePool(request_timeout_s=request_timeout_s, idle_s=config.timeouts.idle_s)
    engine = Engine(config, store, pool, cancel_wait_s=_CANCEL_WAIT_S, replies=replies)
    try:
        engine.attach(surface, [_USER])
        await engine.start()
        await engine.prompt(InboundMessage(surface.name, _KEY, _USER, prompt, "1"))
        stop = asyncio.create_task(interrupted.wait(), name="ask-interrupt")
        waiting: set[asyncio.Future[Any]] = {replies.finished, stop}
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not replies.finished.done():
            await _stop(engine.conversations[_KEY], replies)
            err.write(wording.STOPPED + "\n")
            return EXIT_INTERRUPTED
        return exit_code(replies.finished.result())
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await engine.close()
        await pool.close()
        store.close()


async def _stop(conv: Conversation, replies: TerminalReplies) -> None:
    """Stop the turn as the stop command does, and wait until it has shown its end."""
    while not replies.finished.done():
        if await conv.stop() == "idle":
            if conv.idle:
                return  # nothing ran, and nothing will
            await asyncio.sleep(0.01)  # queued, not started yet: it starts at once, and is stopped then
