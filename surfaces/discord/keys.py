"""Conversation keys: ``discord:<channel id>``, where the channel is a DM or a thread (or, for a
command in an allowed channel itself, that channel)."""

from __future__ import annotations

from core.surface_api import DeliveryFailed

__all__ = ["SURFACE_NAME", "channel_of", "conversation_key"]

SURFACE_NAME = "discord"
_PREFIX = f"{SURFACE_NAME}:"


def conversation_key(channel_id: int) -> str:
    """The engine's key for a conversation held in ``channel_id``."""
    return f"{_PREFIX}{channel_id}"


def channel_of(key: str) -> int:
    """The channel id in a conversation key; ``DeliveryFailed`` for a key that is not Discord's."""
    rest = key.removeprefix(_PREFIX)
    if rest == key or not rest.isdigit():
        raise DeliveryFailed(f"not a Discord conversation: {key!r}")
    return int(rest)
