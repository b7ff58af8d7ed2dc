"""Tool-call approvals: one-time button tokens, expiry, and "allow for this session".

"Allow for this session" covers what the person saw: the same command (``execute``), or the same
kind of call on the same path or target, never every call of a kind (allowing ``ls -la`` must not
let a later ``rm -rf`` run unasked). Its button names that scope before the click.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Literal

from core.acp.types import PermissionRequest, ToolCall
from core.engine import wording
from core.engine.surface import Button

__all__ = ["CHOICES", "Approvals", "PendingApproval", "scope_key", "session_scope"]

#: (option kind, style) in the order shown; numbered replies follow this order.
CHOICES: tuple[tuple[str, Literal["primary", "danger", "default"]], ...] = (
    ("allow_once", "primary"),
    ("allow_always", "default"),
    ("reject_once", "danger"),
)


def session_scope(call: ToolCall) -> str:
    """What "allow for this session" would cover, as the person sees it: the command, path or URL the
    call acts on, else its title ("" when the call says nothing specific: then it is not offered)."""
    return " ".join((call.detail or call.title).split())


def scope_key(request: PermissionRequest) -> tuple[str, str, str] | None:
    """(session, kind, scope) of a request, the key an "allow for this session" is kept under."""
    scope = session_scope(request.tool_call)
    return (request.session_id, request.tool_call.kind or "other", scope) if scope else None


@dataclass(eq=False)
class PendingApproval:
    """A permission request waiting for the person; ``future`` receives the chosen option kind."""

    conversation_key: str
    request: PermissionRequest
    future: asyncio.Future[str]
    tokens: dict[str, str] = field(default_factory=dict)  # one-time token -> option kind
    message_id: str = ""

    def buttons(self) -> tuple[Button, ...]:
        """One button per entry of ``CHOICES``, each carrying its one-time token; "allow for this
        session" names its scope, and is left out when the call names nothing it could be kept for."""
        by_kind = {kind: token for token, kind in self.tokens.items()}
        scope = session_scope(self.request.tool_call)
        labels = {"allow_once": wording.ALLOW_ONCE_LABEL, "reject_once": wording.DENY_LABEL,
                  "allow_always": wording.allow_session_label(scope) if scope else ""}
        return tuple(Button(labels[kind], by_kind[kind], style) for kind, style in CHOICES if labels[kind])


class Approvals:
    """Open approvals by token and by conversation. A token works once; then it is "expired"."""

    def __init__(self) -> None:
        self._by_token: dict[str, PendingApproval] = {}
        self._by_conversation: dict[str, list[PendingApproval]] = {}
        self._session_allows: set[tuple[str, tuple[str, str, str]]] = set()

    def remembered(self, conversation_key: str, request: PermissionRequest) -> bool:
        """True when the person chose "allow for this session" for this very scope earlier."""
        key = scope_key(request)
        return key is not None and (conversation_key, key) in self._session_allows

    def remember(self, conversation_key: str, request: PermissionRequest) -> None:
        """Allow this scope (the same command, or kind and path), without asking, for the rest of the session."""
        if (key := scope_key(request)) is not None:
            self._session_allows.add((conversation_key, key))

    def open(self, conversation_key: str, request: PermissionRequest) -> PendingApproval:
        """Register a request and mint one one-time token per choice."""
        pending = PendingApproval(conversation_key, request, asyncio.get_running_loop().create_future())
        for kind, _style in CHOICES:
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
