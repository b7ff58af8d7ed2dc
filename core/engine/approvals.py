"""Tool-call approvals: one-time button tokens, expiry, and "allow for this session"."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Literal

from core.acp.types import PermissionRequest
from core.engine import wording
from core.engine.surface import Button

__all__ = ["CHOICES", "Approvals", "PendingApproval"]

#: (option kind, button label, style) in the order shown; numbered replies follow this order.
CHOICES: tuple[tuple[str, str, Literal["primary", "danger", "default"]], ...] = (
    ("allow_once", wording.ALLOW_ONCE_LABEL, "primary"),
    ("allow_always", wording.ALLOW_SESSION_LABEL, "default"),
    ("reject_once", wording.DENY_LABEL, "danger"),
)


@dataclass(eq=False)
class PendingApproval:
    """A permission request waiting for the person; ``future`` receives the chosen option kind."""

    conversation_key: str
    request: PermissionRequest
    future: asyncio.Future[str]
    tokens: dict[str, str] = field(default_factory=dict)  # one-time token -> option kind
    message_id: str = ""

    def buttons(self) -> tuple[Button, ...]:
        """One button per entry of ``CHOICES``, each carrying its one-time token."""
        by_kind = {kind: token for token, kind in self.tokens.items()}
        return tuple(Button(label, by_kind[kind], style) for kind, label, style in CHOICES)


def _allow_key(conversation_key: str, request: PermissionRequest) -> tuple[str, str, str]:
    call = request.tool_call
    return conversation_key, request.session_id, call.kind or call.title


class Approvals:
    """Open approvals by token and by conversation. A token works once; then it is "expired"."""

    def __init__(self) -> None:
        self._by_token: dict[str, PendingApproval] = {}
        self._by_conversation: dict[str, list[PendingApproval]] = {}
        self._session_allows: set[tuple[str, str, str]] = set()

    def remembered(self, conversation_key: str, request: PermissionRequest) -> bool:
        """True when the person chose "allow for this session" for this tool kind earlier (the
        issue's rule: remembered per tool kind; the approval's outcome line says so plainly)."""
        return _allow_key(conversation_key, request) in self._session_allows

    def remember(self, conversation_key: str, request: PermissionRequest) -> None:
        """Allow this tool kind, without asking, for the rest of the session."""
        self._session_allows.add(_allow_key(conversation_key, request))

    def open(self, conversation_key: str, request: PermissionRequest) -> PendingApproval:
        """Register a request and mint one one-time token per choice."""
        pending = PendingApproval(conversation_key, request, asyncio.get_running_loop().create_future())
        for kind, _label, _style in CHOICES:
            token = secrets.token_urlsafe(12)
            pending.tokens[token] = kind
            self._by_token[token] = pending
        self._by_conversation.setdefault(conversation_key, []).append(pending)
        return pending

    def close(self, pending: PendingApproval) -> None:
        """Expire every token of this approval (after a decision, a timeout or a stop)."""
        for token in pending.tokens:
            self._by_token.pop(token, None)
        waiting = self._by_conversation.get(pending.conversation_key, [])
        if pending in waiting:
            waiting.remove(pending)
        if not waiting:
            self._by_conversation.pop(pending.conversation_key, None)

    def resolve_token(self, conversation_key: str, token: str) -> PendingApproval | None:
        """Decide by button token. None when the token is unknown, used, expired or foreign."""
        pending = self._by_token.get(token)
        if pending is None or pending.conversation_key != conversation_key or pending.future.done():
            return None
        kind = pending.tokens[token]
        self.close(pending)
        pending.future.set_result(kind)
        return pending

    def resolve_reply(self, conversation_key: str, kind: str) -> PendingApproval | None:
        """Decide the oldest open approval of a conversation by a numbered text reply."""
        waiting = self._by_conversation.get(conversation_key)
        if not waiting:
            return None
        pending = waiting[0]
        self.close(pending)
        if not pending.future.done():
            pending.future.set_result(kind)
        return pending

    def forget_session(self, conversation_key: str) -> None:
        """Drop the conversation's "allow for this session" choices (its session is gone)."""
        self._session_allows = {k for k in self._session_allows if k[0] != conversation_key}
