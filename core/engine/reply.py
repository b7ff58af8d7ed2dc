"""Where the two sides of a turn meet.

The agent side (``core.engine.turn``) prompts the agent and climbs the retry ladder. It hands every
event to the turn's :class:`Reply` as it comes (what the agent streams, and the turn's own events:
:class:`Retrying`, :class:`RetryEnded`, notices), asks the Reply when a tool call needs the person,
and ends with ONE :class:`TurnOutcome`. A Reply is what the person sees: a chat's (a document
streamed into platform messages, ``core.engine.chat_reply``) or the terminal's (``core.terminal``).
"""

from __future__ import annotations

import secrets
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.acp.exchange import ElicitationRequest
from core.acp.types import STOP_REASON_REFUSAL, AcpEvent, Cost, PermissionRequest, RefusalInfo
from core.describing import Described
from core.engine.binding import SessionBinding
from core.engine.messages import QueueItem
from core.engine.surface import Surface

__all__ = ["Replies", "Reply", "RetryEnded", "Retrying", "TurnOutcome", "TurnScope"]


@dataclass(eq=False, slots=True)
class TurnScope:
    """One turn's place: its conversation's key, surface and session, and the stop state the
    conversation and its running turn share."""

    key: str
    surface: Surface
    binding: SessionBinding
    #: A stop was asked for: the turn's cancellation is the person's, not the relay's shutdown.
    stopping: bool = False
    #: False while the final answer is being delivered (a stop then no longer cancels the turn).
    cancellable: bool = True
    #: Another relay owns the conversation now (relays sharing a store): nothing more is sent from here.
    disowned: bool = False
    #: The reply completed the message in the journal the moment it was shown (the conversation
    #: need not again).
    completed: bool = False
    #: The one-time token of the Stop button on the answer while it is written (``stop_button``).
    stop_token: str = field(default_factory=lambda: secrets.token_urlsafe(12))


@dataclass(frozen=True, slots=True)
class Retrying(AcpEvent):
    """The ladder retries a transient failure: ``attempt`` of ``total`` comes in ``delay_s`` seconds."""

    attempt: int
    total: int
    delay_s: float
    failure: Described


@dataclass(frozen=True, slots=True)
class RetryEnded(AcpEvent):
    """The ladder retried, and then succeeded (or gave up after ``attempts``)."""

    succeeded: bool
    attempts: int


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How one turn ended: the one account of it both sides agree on.

    ``stop_reason`` is the agent's (``cancelled`` after a stop), empty when the turn failed or the
    relay was shutting down (``interrupted``). ``text`` is the answer text of the last attempt (an
    echo of its error left out); ``tool_ran``, whether a tool may have run; ``denied``, whether a
    tool call was denied; ``empty``, the turn ended normally with nothing at all (no text, tool or
    refusal). ``failure`` is the error the turn ended with, ``described`` its wording.
    """

    elapsed_s: float
    stop_reason: str = ""
    text: str = ""
    tool_ran: bool = False
    denied: bool = False
    empty: bool = False
    context_pct: float | None = None
    #: What the turn cost, when the agent reported its session's cost before and after it.
    cost: Cost | None = None
    refusal: RefusalInfo | None = None
    failure: BaseException | None = None
    described: Described | None = None
    interrupted: bool = False

    @property
    def refused(self) -> bool:
        """The model declined the request (a refusal is not a failure, and never retried)."""
        return self.stop_reason == STOP_REASON_REFUSAL


class Reply(Protocol):
    """What the person sees of one turn, and how they are asked about a tool call."""

    #: Someone can be asked to approve a tool call (else the agent's request fails the turn).
    can_ask: bool

    def show(self, event: AcpEvent) -> None:
        """Show one event now (an answer chunk, a tool line, a notice, the turn's end...)."""
        ...

    def take_back(self, text: str) -> None:
        """``text``, shown already, was only the failed attempt's error in the agent's words."""
        ...

    async def approve(self, request: PermissionRequest) -> str:
        """Ask the person about a tool call; returns the chosen option kind (``allow_once``...)."""
        ...

    async def elicit(self, request: ElicitationRequest) -> dict[str, Any]:
        """Ask the person the agent's question (a form, or a link to open); returns the ACP answer."""
        ...

    async def finish(self, outcome: TurnOutcome) -> None:
        """The turn is over (also when it was cancelled): show its final state."""
        ...


class Replies(Protocol):
    """Makes the Reply of each turn."""

    def open(self, scope: TurnScope, item: QueueItem) -> AbstractAsyncContextManager[Reply]:
        """The Reply to ``item``, open while its turn runs and until it is finished."""
        ...
