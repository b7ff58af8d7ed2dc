"""Per-surface allow-lists, deny by default."""

from __future__ import annotations

import logging
from collections.abc import Collection

__all__ = ["AccessControl"]

log = logging.getLogger("acp_relay.engine.access")


class AccessControl:
    """Who may talk to the agent on each surface. An empty list lets nobody in."""

    def __init__(self) -> None:
        self._allowed: dict[str, frozenset[str]] = {}
        self._refused: set[tuple[str, str]] = set()

    def allow(self, surface: str, user_ids: Collection[str | int]) -> None:
        """Set the surface's allow-list, replacing any earlier one; ids compare as strings."""
        self._allowed[surface] = frozenset(str(u) for u in user_ids)

    def permits(self, surface: str, user_id: str) -> bool:
        """True when ``user_id`` is on the surface's allow-list."""
        return str(user_id) in self._allowed.get(surface, frozenset())

    def first_refusal(self, surface: str, user_id: str) -> bool:
        """Log the attempt; True the first time this person is refused (they are told once)."""
        log.warning("refused %s user %s: not on the allow-list", surface, user_id)
        key = (surface, str(user_id))
        if key in self._refused:
            return False
        self._refused.add(key)
        return True
