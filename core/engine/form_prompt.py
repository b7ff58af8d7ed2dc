"""Asking the person an agent's question (``elicitation/create``): the card with its buttons (or
numbered replies), kept up to date as fields are answered, and settled once the answer is sent.

A form that cannot be shown in a chat (a nested object) is declined at once, with the reason in the
answer's ``_meta`` for the agent and a notice for the person. A form left unanswered past
``timeouts.approval_s`` is declined by the ACP layer (``core.acp.elicit``); its card then says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from core.acp.exchange import ElicitationRequest
from core.engine.delivery import Outbox
from core.engine.form_state import Forms, OpenForm
from core.engine.forms import FormField, Unrenderable, form_fields
from core.engine.reply import TurnScope
from core.engine.streamer import Streamer
from core.engine.tasks import TaskSet

__all__ = ["FormPrompts", "declined_because", "fields_of"]

log = logging.getLogger("acp_relay.engine.form_prompt")


def fields_of(request: ElicitationRequest) -> list[FormField]:
    """The fields to ask (none for a link to open); ``Unrenderable`` for what a chat cannot show."""
    if request.mode == "url":
        if not request.url:
            raise Unrenderable("The agent asked to open a link but gave none.")
        return []
    if request.mode != "form":
        raise Unrenderable(f"The agent asked in a way this relay does not know ({request.mode or 'no mode'}).")
    return form_fields(request.schema)


def declined_because(why: str) -> dict[str, Any]:
    """A decline that tells the agent why, in ``_meta`` (ACP's answer has no field for words)."""
    return {"action": "decline", "_meta": {"acp-relay": {"reason": why}}}


class FormPrompts:
    """Posts form cards, edits them as the person answers, and settles them."""

    def __init__(self, forms: Forms, outbox: Outbox, tasks: TaskSet, *, cancel_wait_s: float,
                 closing: Callable[[], bool]) -> None:
        self.forms = forms
        self.outbox = outbox
        self.tasks = tasks
        self.cancel_wait_s = cancel_wait_s
        self._closing = closing

    async def ask(self, conv: TurnScope, request: ElicitationRequest, fields: list[FormField],
                  streamer: Streamer) -> dict[str, Any]:
        """Show the form (or link) and wait for the person's answer; returns the ACP answer."""
        form = OpenForm(conv.key, request, fields, can_buttons=streamer.capabilities.can_buttons)
        self.forms.open(form)
        outcome = "cancel"
        followed = asyncio.create_task(self._followed(form), name=f"form-link-{conv.key}")
        try:
            form.message_id = await streamer.post((form.card(),), form.buttons())
            while not form.result.done():
                await form.changed.wait()
                form.changed.clear()
                if not form.result.done():  # a field was answered, or a toggle changed: the card follows
                    form.message_id = await streamer.edit_message(form.message_id, (form.card(),), form.buttons())
            answer = form.result.result()
            outcome = "completed" if form.request.completed.is_set() else str(answer.get("action"))
            return answer
        except asyncio.CancelledError:  # no answer within approval_s, a stop, or the agent died
            session = conv.binding.session
            ended = conv.stopping or session is None or not session.runtime.alive
            outcome = "stopped" if ended else "timed_out"
            raise
        finally:
            followed.cancel()
            self.forms.close(form)
            if form.message_id and not self._closing():
                self.tasks.spawn(self._settle(conv, form, outcome), name=f"form-settle-{conv.key}")

    @staticmethod
    async def _followed(form: OpenForm) -> None:
        """The agent said the link was followed through: the card settles as if Done was pressed."""
        await form.request.completed.wait()
        form.finish({"action": "accept"})

    async def _settle(self, conv: TurnScope, form: OpenForm, outcome: str) -> None:
        """The answer reaches the agent first; then the card shows it, without buttons."""
        try:
            await asyncio.wait_for(form.request.answered.wait(), self.cancel_wait_s)
        except TimeoutError:
            log.info("the answer to a form in %s was never written (turn ended first)", conv.key)
        await self.outbox.edit(conv.surface, conv.key, form.message_id, (form.card(outcome),))
