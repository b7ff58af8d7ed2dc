"""One-time buttons that switch a conversation's model (the model command's list)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.engine.messages import Button

__all__ = ["ModelChoices", "Offer"]

#: A list offers at most this many buttons (platforms cap a message's buttons; Telegram ~100, Slack 25).
MAX_BUTTONS = 20


@dataclass(slots=True)
class Offer:
    """The buttons of one model list; ``message_id`` is the message that shows them."""

    tokens: dict[str, str] = field(default_factory=dict)  # token -> model
    message_id: str = ""


class ModelChoices:
    """The latest model list of each conversation; a newer list, or a choice, expires the older buttons."""

    def __init__(self) -> None:
        self._offers: dict[str, Offer] = {}

    def offer(self, conversation_key: str, models: Sequence[str],
              names: Mapping[str, str] | None = None) -> tuple[Offer, tuple[Button, ...]]:
        """Mint one button per model (replacing the conversation's earlier list), labelled with the
        name the agent gives it (``names``), else its id."""
        offer = Offer({secrets.token_urlsafe(12): model for model in models[:MAX_BUTTONS]})
        self._offers[conversation_key] = offer
        names = names or {}
        return offer, tuple(Button(names.get(model, model), token) for token, model in offer.tokens.items())

    def take(self, conversation_key: str, token: str) -> tuple[Offer, str] | None:
        """The model a press chose (once), or None for an unknown, used or foreign token."""
        offer = self._offers.get(conversation_key)
        if offer is None or token not in offer.tokens:
            return None
        del self._offers[conversation_key]
        return offer, offer.tokens[token]

    def forget(self, conversation_key: str) -> None:
        """The conversation was reset: its list no longer applies."""
        self._offers.pop(conversation_key, None)
