"""Slack's failures as the core's delivery errors, raised ``from`` the SDK's error.

Slack answers most refusals with HTTP 200 and ``{"ok": false, "error": "<code>"}``; a 429 carries
``Retry-After`` (after slack-sdk's own ``AsyncRateLimitErrorRetryHandler`` has retried once). A 2xx
whose body is no Slack answer, and an ``ok`` answer without the message's ts, are
``AnswerUnreadable``: the call was taken and may be shown, so it is never sent again as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

from core.surface_api import (
    AnswerUnreadable,
    DeliveryError,
    DeliveryFailed,
    DeliveryRefused,
    MarkupRejected,
    MessageTooLong,
    RateLimited,
)

__all__ = ["AUTH_ERRORS", "SDK_FAILURES", "delivery_error", "error_code", "message_ts", "translated"]

T = TypeVar("T")

#: The message will never fit as it is: re-split.
_TOO_LONG = frozenset({"msg_too_long", "msg_blocks_too_long"})
#: The blocks were not understood: send plain text.
_MARKUP = frozenset({"invalid_blocks", "invalid_blocks_format"})
#: The app can no longer post here (removed from the channel, the channel archived or gone).
_REFUSED = frozenset({"channel_not_found", "not_in_channel", "is_archived", "channel_is_archived",
                      "team_access_not_granted", "restricted_action", "restricted_action_read_only_channel",
                      "restricted_action_thread_only_channel", "restricted_action_non_threadable_channel",
                      "ekm_access_denied", "access_denied"})
#: The bot token no longer works at all: nothing will be delivered until an operator acts.
AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive",
                         "org_login_required"})


#: What a Web API call raises when Slack (or the network to it) fails; anything else is a bug.
SDK_FAILURES = (SlackApiError, SlackClientError, aiohttp.ClientError, asyncio.TimeoutError, OSError)


def error_code(exc: BaseException) -> str:
    """Slack's error code (``not_in_channel``...), or "" for a failure that is not Slack's answer."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or "")
    return ""


def _retry_after(exc: SlackApiError) -> float:
    headers = exc.response.headers or {}
    for name, value in headers.items():
        if name.lower() == "retry-after":
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                break
    return 1.0


def delivery_error(exc: BaseException) -> DeliveryError:
    """The core's error for a Slack (or network) failure; secrets never appear in its message."""
    code = error_code(exc)
    if isinstance(exc, SlackApiError):
        data = exc.response.data
        if 200 <= exc.response.status_code <= 299 and not (isinstance(data, dict) and "ok" in data):
            # Slack took the call (2xx) but said nothing the SDK could read (not JSON): it may be done.
            return AnswerUnreadable(f"slack: HTTP {exc.response.status_code} without a readable answer")
        if exc.response.status_code == 429 or code == "ratelimited":
            return RateLimited(_retry_after(exc), f"slack: {code or 'ratelimited'}")
        if code in _TOO_LONG:
            return MessageTooLong(f"slack: {code}")
        if code in _MARKUP:
            return MarkupRejected(f"slack: {code}")
        if code in _REFUSED:
            return DeliveryRefused(f"slack: {code}")
        return DeliveryFailed(f"slack: {code or f'HTTP {exc.response.status_code}'}")
    return DeliveryFailed(f"slack: {type(exc).__name__}")


def message_ts(response: Any, key: str, method: str) -> str:
    """The message's ts in an ``ok`` answer; ``AnswerUnreadable`` when it is not there (the message
    may well be posted, but without its ts it can never be edited, and a ts of "None" would be)."""
    ts = response.get(key) if hasattr(response, "get") else None
    if not isinstance(ts, str) or not ts:
        raise AnswerUnreadable(f"slack: {method} answered ok without {key}")
    return ts


async def translated(call: Awaitable[T]) -> T:
    """Await a Web API call; its failure becomes the core's delivery error."""
    try:
        return await call
    except SDK_FAILURES as exc:
        raise delivery_error(exc) from exc
