"""What a turn and an approval prompt see of a conversation: a narrow view, so that the engine, the
conversation and the turn never import one another."""

from __future__ import annotations

from typing import Protocol

from core.acp.session import AcpSession
from core.acp.types import Notice
from core.engine.surface import Surface

__all__ = ["ConversationView"]


class ConversationView(Protocol):
    """One conversation as its running turn uses it."""

    key: str
    surface: Surface
    session: AcpSession | None
    #: A stop was asked for: the turn's cancellation is the person's, not the relay's shutdown.
    stopping: bool
    #: False while the final answer is being delivered (a stop then no longer cancels the turn).
    cancellable: bool
    #: Another relay owns the conversation now (relays sharing a store): nothing more is sent from here.
    disowned: bool
    context_pct: float | None

    async def ensure_session(self, notify: list[Notice]) -> AcpSession:
        """The live ACP session (reused, loaded after a restart, else new); notices say what happened."""
        ...

    def drop_session(self) -> None:
        """Forget the binding (the agent lost the session): the next turn starts a new one."""
        ...
