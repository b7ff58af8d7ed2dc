"""Steering a running turn, and what a queued message's receipt offers.

A message sent while a turn runs waits in the queue. Its receipt offers, where the surface has
buttons: "Add to the running turn" (the agent takes it mid-turn: ``_session/steering``, offered
where the agent says it can) or "Send now" (an agent that cannot: the running turn is stopped and
this message is answered next), and "Cancel" (taken out of the queue, never answered). ``/steer
text`` (each surface's spelling) adds the words to the running turn directly. A message added to
the turn is answered by the turn that is running, so it is complete once the agent took it; the
receipt then says so (the transcript shows it was steered).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field

from core.acp.client import AcpError
from core.acp.session_handle import AcpRuntimeError
from core.engine import twoway_wording as say
from core.engine.conversation import Conversation
from core.engine.delivery import Outbox
from core.engine.journal import Journal
from core.engine.messages import Button, InboundMessage, PressResult, QueueItem
from core.engine.turn import prompt_content

__all__ = ["Receipt", "Steering"]

log = logging.getLogger("acp_relay.engine.steering")


@dataclass(eq=False, slots=True)
class Receipt:
    """The receipt of one queued message: its buttons' tokens and the message that shows it."""

    key: str
    message: InboundMessage
    tokens: dict[str, str] = field(default_factory=dict)  # token -> steer, send_now, remove
    message_id: str = ""


class Steering:
    """Receipts by token; steering a conversation's running turn."""

    def __init__(self, outbox: Outbox, journal: Journal) -> None:
        self.outbox = outbox
        self.journal = journal
        self._by_token: dict[str, Receipt] = {}

    @staticmethod
    def can_steer(conv: Conversation) -> bool:
        """A turn runs, on an agent that takes ``_session/steering`` (whether it is still prompting is
        for the agent to say: ``promptRequired``)."""
        session = conv.session
        return conv.busy and session is not None and session.runtime.steering

    def buttons(self, conv: Conversation, item: QueueItem) -> tuple[Receipt | None, tuple[Button, ...]]:
        """The receipt's buttons for a message that waits in ``conv``'s queue (none without buttons)."""
        if not conv.surface.capabilities_for(conv.key).can_buttons:
            return None, ()
        receipt = Receipt(conv.key, item.message)
        first = ("steer", say.ADD_TO_TURN_LABEL) if self.can_steer(conv) else ("send_now", say.SEND_NOW_LABEL)
        buttons = []
        for action, label in (first, ("remove", say.REMOVE_LABEL)):
            token = secrets.token_urlsafe(12)
            receipt.tokens[token] = action
            self._by_token[token] = receipt
            buttons.append(Button(label, token, "danger" if action == "remove" else "primary"))
        return receipt, tuple(buttons)

    def _close(self, receipt: Receipt) -> None:
        for token in receipt.tokens:
            self._by_token.pop(token, None)

    async def press(self, conv: Conversation | None, token: str) -> PressResult | None:
        """A press on a receipt's button; None for a token no receipt knows. A message no longer in
        the queue (its turn began, or it was dropped) answers "expired" and changes nothing."""
        receipt = self._by_token.get(token)
        if receipt is None or conv is None or receipt.key != conv.key:
            return None
        item = next((i for i in conv.queue if i.message.message_id == receipt.message.message_id), None)
        if item is None:
            self._close(receipt)
            return None
        action = receipt.tokens[token]
        self._close(receipt)
        if action == "remove":
            conv.queue.remove(item)
            self.journal.complete(item.message)
            outcome = say.receipt_outcome("removed")
        elif action == "send_now":
            conv.queue.remove(item)
            conv.queue.appendleft(item)  # answered next, once the running turn has stopped
            await conv.stop()
            outcome = say.receipt_outcome("send_now")
        else:
            taken = await self.steer(conv, item.message)
            if taken:
                conv.queue.remove(item)
            outcome = say.steered_text(item.message.text) if taken else say.STEER_FAILED
        if receipt.message_id:
            await self.outbox.edit(conv.surface, conv.key, receipt.message_id, outcome)
        return PressResult("resolved", outcome)

    async def steer(self, conv: Conversation, message: InboundMessage) -> bool:
        """Add ``message`` to the running turn; True when the agent took it (then it is answered)."""
        session = conv.session
        if session is None or not self.can_steer(conv):
            return False
        try:
            outcome = await session.steer(prompt_content(message, images_ok=session.runtime.accepts_images))
        except (AcpError, AcpRuntimeError) as exc:
            log.info("the agent did not take a steering message in %s: %s", conv.key, type(exc).__name__)
            return False
        if outcome not in ("injected", "startedNewTurn"):
            log.info("the agent answered a steering message in %s with %s", conv.key, outcome)
            return False
        self.journal.complete(message)
        return True
