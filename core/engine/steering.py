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

from core.acp.client import AcpError
from core.acp.session_handle import AcpRuntimeError
from core.engine import twoway_wording as say
from core.engine.conversation import Conversation
from core.engine.delivery import Outbox
from core.engine.journal import Journal
from core.engine.messages import Button, InboundMessage, PressResult, QueueItem
from core.engine.receipts import Receipt, Receipts
from core.engine.turn import prompt_content

__all__ = ["Steering"]

log = logging.getLogger("acp_relay.engine.steering")


class Steering:
    """Receipts by token; steering a conversation's running turn."""

    def __init__(self, outbox: Outbox, journal: Journal, receipts: Receipts) -> None:
        self.outbox = outbox
        self.journal = journal
        self.receipts = receipts

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
        first = ("steer", say.ADD_TO_TURN_LABEL) if self.can_steer(conv) else ("send_now", say.SEND_NOW_LABEL)
        return self.receipts.open(conv.key, item.message, (first, ("remove", say.REMOVE_LABEL)))

    async def press(self, conv: Conversation | None, token: str) -> PressResult | None:
        """A press on a receipt's button; None for a token no receipt knows. A message no longer in
        the queue (its turn began, or it was dropped) answers "expired" and changes nothing."""
        receipt = self.receipts.by_token(token)
        if receipt is None or conv is None or receipt.key != conv.key:
            return None
        item = next((i for i in conv.queue if i.message.message_id == receipt.message.message_id), None)
        if item is None:
            self.receipts.close(receipt)
            return None
        action = receipt.tokens[token]
        self.receipts.close(receipt)
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
