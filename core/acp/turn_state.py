"""The state of one prompt turn on a session (``core.acp.session``): what it waits for, what it saw."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.acp.elicit import Elicitor
from core.acp.error_text import ThreadFailure
from core.acp.exchange import ElicitationRequest
from core.acp.tool_gate import Approver
from core.acp.types import STOP_REASON_END_TURN, AcpEvent, AcpPromptStats, ToolCall

__all__ = ["EventSink", "Signal", "TurnState", "first_done"]

EventSink = Callable[[AcpEvent], None]


class Signal:
    """Set once. ``first_done`` takes its ``future`` beside a request's answer, where an
    asyncio.Event would need a task of its own to be waited on (a prompt turn makes none)."""

    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def set(self) -> None:
        """Set it (again: nothing more happens)."""
        if not self.future.done():
            self.future.set_result(None)

    def is_set(self) -> bool:
        """It was set."""
        return self.future.done()


async def first_done(futures: tuple[asyncio.Future[Any], ...], timeout_s: float) -> set[asyncio.Future[Any]]:
    """``asyncio.wait(futures, timeout=timeout_s, return_when=FIRST_COMPLETED)``'s done set, for futures
    only: a prompt turn waits so once, in a burst ahead of every first text, and ``asyncio.wait`` also
    makes a set, checks each future for a coroutine (an ABC check each) and wraps it (about 10 us more)."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not waiter.done():
            waiter.set_result(None)

    timer = loop.call_later(timeout_s, wake)
    for future in futures:
        future.add_done_callback(wake)
    try:
        await waiter
    finally:
        timer.cancel()
        for future in futures:
            future.remove_done_callback(wake)
    return {future for future in futures if future.done()}


@dataclass(eq=False)
class TurnState:
    """One prompt turn of a session, as the session tracks it."""


    on_event: EventSink | None
    approver: Approver | None
    approval_timeout_s: float
    elicitor: Elicitor | None = None
    stats: AcpPromptStats = field(default_factory=AcpPromptStats)
    tools: dict[str, ToolCall] = field(default_factory=dict)
    ended: Signal = field(default_factory=Signal)  # ended without a prompt response
    failed: Signal = field(default_factory=Signal)  # ``error`` was set on our side
    done: asyncio.Event = field(default_factory=asyncio.Event)  # prompt() has returned or raised
    forced_stop: str = STOP_REASON_END_TURN
    cancel_requested: bool = False
    error: BaseException | None = None
    permission_tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    restoring: asyncio.Task[None] | None = None  # switching the agent back to asking, mid-turn
    thread: ThreadFailure = field(default_factory=ThreadFailure)  # codex-acp 2.x's failed turns
    links: dict[str, ElicitationRequest] = field(default_factory=dict)  # URL-mode questions, by elicitationId
    denied: set[str] = field(default_factory=set)  # tool call ids the relay answered with a rejection
    #: Calls marked in_progress without a permission request yet: each must be asked for in time.
    unasked: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
