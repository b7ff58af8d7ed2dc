"""The receipts of queued messages: which buttons each offers, and settling each one once its
message leaves the queue (answered now, added to the running turn, dropped by a stop), so no receipt
keeps buttons that could only answer "expired"."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from core.engine import twoway_wording as say
from core.engine.delivery import Outbox
from core.engine.messages import Button, InboundMessage
from core.engine.surface import Surface
from core.engine.tasks import TaskSet

__all__ = ["Receipt", "Receipts"]


@dataclass(eq=False, slots=True)
class Receipt:
    """The receipt of one queued message: its buttons' tokens and the message that shows it."""

    key: str
    message: InboundMessage
    tokens: dict[str, str] = field(default_factory=dict)  # token -> steer, send_now, remove
    message_id: str = ""


class Receipts:
    """Open receipts by button token and by the message they stand for."""

    def __init__(self, outbox: Outbox, tasks: TaskSet) -> None:
        self.outbox = outbox
        self.tasks = tasks
        self._by_token: dict[str, Receipt] = {}
        self._by_message: dict[tuple[str, str], Receipt] = {}

    def open(self, key: str, message: InboundMessage, actions: tuple[tuple[str, str], ...]
             ) -> tuple[Receipt, tuple[Button, ...]]:
        """A receipt for ``message`` with one button per (action, label)."""
        receipt = Receipt(key, message)
        buttons = []
        for action, label in actions:
            token = secrets.token_urlsafe(12)
            receipt.tokens[token] = action
            self._by_token[token] = receipt
            buttons.append(Button(label, token, "danger" if action == "remove" else "primary"))
        self._by_message[(key, message.message_id)] = receipt
        return receipt, tuple(buttons)

    def __len__(self) -> int:
        return len(self._by_message)

    def by_token(self, token: str) -> Receipt | None:
        """The receipt a button press is for (None: settled, or never ours)."""
        return self._by_token.get(token)

    def close(self, receipt: Receipt) -> None:
        """Its buttons answer nothing from now on."""
        for token in receipt.tokens:
            self._by_token.pop(token, None)
        if self._by_message.get((receipt.key, receipt.message.message_id)) is receipt:
            del self._by_message[(receipt.key, receipt.message.message_id)]

    def settle(self, surface: Surface, key: str, message: InboundMessage, outcome: str) -> None:
        """``message`` left the queue (its turn began, or a stop dropped it): its receipt loses its
        buttons and says why (in the background: a turn never waits for it)."""
        receipt = self._by_message.get((key, message.message_id))
        if receipt is None:
            return
        self.close(receipt)
        if receipt.message_id:
            self.tasks.spawn(self.outbox.edit(surface, key, receipt.message_id, say.receipt_outcome(outcome)),
                             name=f"receipt-{key}")
