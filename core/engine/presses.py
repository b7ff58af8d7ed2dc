"""Button presses that reach a relay which does not own the conversation (relays sharing a store).

An approval waits in the owner's memory, with its turn; the platform may deliver the press to any
relay (another Socket Mode connection, the load balancer). The relay that received it sends it to
the owner (``core.engine.owner_calls``), the owner resolves it as if pressed there and sends back
what it did, and the receiving relay answers the platform with that. A press the owner does not
answer in time (``WAIT_S``: platforms want an answer to a tap within 3 s) is answered "expired": it
changed nothing that the person can tell, and a later tap is refused as used or applied, never twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any, cast

from core.engine import wording
from core.engine.messages import ButtonPress, PressOutcome, PressResult
from core.engine.owner_calls import CallFailed, Handler, OwnerCalls, OwnerSilent

__all__ = ["KIND", "STOP_WAIT_S", "WAIT_S", "forward", "handler", "stopped"]

KIND = "press"
WAIT_S = 2.5
#: How long a Stop press waits for its turn to end before it is answered "Stopping…" (under ``WAIT_S``,
#: which a press forwarded from another relay waits).
STOP_WAIT_S = WAIT_S - 0.5


async def forward(calls: OwnerCalls, press: ButtonPress) -> PressResult:
    """Have the owner resolve ``press``; what it did, or "expired" when it did not answer in time."""
    try:
        answer = await calls.call(KIND, press.conversation_key, asdict(press), wait_s=WAIT_S)
    except (OwnerSilent, CallFailed):
        return PressResult("expired", wording.PRESS_EXPIRED)
    return PressResult(cast(PressOutcome, answer["outcome"]), str(answer["text"]))


def handler(handle: Callable[[ButtonPress], Awaitable[PressResult]]) -> Handler:
    """The owner's side: ``handle`` resolves a press sent by another relay."""

    async def on_call(key: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await handle(ButtonPress(**args))
        return {"outcome": result.outcome, "text": result.text}

    return on_call


async def stopped(stopping: asyncio.Task[Any]) -> PressResult:
    """The answer to a Stop press whose stop runs in ``stopping``: "Stopped." once the turn ended within
    ``STOP_WAIT_S``, else "Stopping…" (an agent slow to cancel is waited out by the stop itself)."""
    done, _ = await asyncio.wait({stopping}, timeout=STOP_WAIT_S)
    return PressResult("resolved", wording.STOPPED if done else wording.STOPPING)
