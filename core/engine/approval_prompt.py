"""Asking the person about a tool call: the prompt with its buttons, the wait, and the settle edit."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from core.acp.types import PermissionRequest
from core.engine import wording
from core.engine.approvals import Approvals, session_scope
from core.engine.delivery import Outbox
from core.engine.reply import TurnScope
from core.engine.streamer import Streamer
from core.engine.tasks import TaskSet

__all__ = ["ApprovalPrompts"]

log = logging.getLogger("acp_relay.engine.approval_prompt")


class ApprovalPrompts:
    """Posts approval prompts and, once decided, edits them to say what happened."""

    def __init__(self, approvals: Approvals, outbox: Outbox, tasks: TaskSet, *, cancel_wait_s: float,
                 closing: Callable[[], bool]) -> None:
        self.approvals = approvals
        self.outbox = outbox
        self.tasks = tasks
        self.cancel_wait_s = cancel_wait_s
        self._closing = closing  # shutting down: open prompts are left as they are (a later tap is "expired")

    async def ask(self, conv: TurnScope, request: PermissionRequest, streamer: Streamer) -> str:
        """Buttons (or numbered replies) for one permission request; returns an option kind."""
        pending = self.approvals.open(conv.key, request)
        call = request.tool_call
        text = wording.approval_prompt_text(call.display, call.kind, "\n".join(call.content))
        buttons = pending.buttons() if streamer.capabilities.can_buttons else ()
        if not buttons:
            text += "\n\n" + wording.approval_numbered_hint(session_scope(call))
        outcome = "expired"
        try:
            pending.message_id = await streamer.post(text, buttons)
            kind = await pending.future
            outcome = kind
            return kind
        except asyncio.CancelledError:  # a stop, the agent dying, or no answer within approval_s
            session = conv.binding.session
            ended = conv.stopping or session is None or not session.runtime.alive
            outcome = "cancelled" if ended else "timed_out"
            raise
        finally:
            self.approvals.close(pending)
            if pending.message_id and not self._closing():
                self.tasks.spawn(self._settle(conv, pending.message_id, request, text, outcome),
                                 name=f"approval-settle-{conv.key}")

    async def _settle(self, conv: TurnScope, message_id: str, request: PermissionRequest,
                      text: str, outcome: str) -> None:
        """The decision (a stop's "cancelled" too) reaches the agent first; then the buttons change."""
        try:
            await asyncio.wait_for(request.answered.wait(), self.cancel_wait_s)
        except TimeoutError:
            log.info("permission answer in %s was never written (turn ended first)", conv.key)
        call = request.tool_call
        outcome_line = wording.approval_outcome_text(outcome, call.display, call.kind, session_scope(call))
        final = f"{text}\n\n{outcome_line}"
        await self.outbox.edit(conv.surface, conv.key, message_id, final)
