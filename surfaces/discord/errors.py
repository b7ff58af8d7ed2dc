"""discord.py's failures as the core's delivery errors (always raised ``from`` the SDK's error).

discord.py handles Discord's rate-limit buckets itself: it reads the ``X-RateLimit-*`` headers and
waits before a request that would exceed them, and it retries a 429 that carries the ``Via`` header
(Discord's own 429s do; a Cloudflare ban does not). A 429 it does not retry, and a wait longer than
the client's ``max_ratelimit_timeout``, reach here and become ``RateLimited``: the core then holds
the whole channel for that long and sends again.
"""

from __future__ import annotations

import asyncio

import aiohttp
import discord

from core.surface_api import DeliveryError, DeliveryFailed, DeliveryRefused, MessageTooLong, RateLimited

__all__ = ["PLATFORM_ERRORS", "REFUSED_CODES", "THREAD_EXISTS", "delivery_error", "retry_after"]

#: Discord's JSON error codes that mean the channel will never take the message.
REFUSED_CODES = frozenset({
    10003,  # Unknown Channel: it was deleted
    10013,  # Unknown User
    50001,  # Missing Access: the bot was removed, or cannot see the channel
    50007,  # Cannot send messages to this user (DMs closed)
    50013,  # Missing Permissions
    50083,  # the thread is archived and the bot cannot unarchive it
})
#: "A thread has already been created for this message."
THREAD_EXISTS = 160004
#: What a Discord call can raise that is the platform's doing, not ours.
PLATFORM_ERRORS = (discord.DiscordException, aiohttp.ClientError, OSError, asyncio.TimeoutError)
_INVALID_FORM = 50035
_DEFAULT_RETRY_S = 1.0


def retry_after(exc: discord.HTTPException) -> float:
    """Seconds a 429 asks to wait (its headers), 1 s when it does not say."""
    headers = getattr(exc.response, "headers", None) or {}
    for name in ("Retry-After", "X-RateLimit-Reset-After"):
        try:
            return max(0.0, float(headers.get(name, "")))
        except ValueError:
            continue
    return _DEFAULT_RETRY_S


def delivery_error(exc: BaseException) -> DeliveryError:
    """The core's error for a failed Discord call (raise it ``from exc``)."""
    if isinstance(exc, discord.RateLimited):
        return RateLimited(exc.retry_after, "Discord rate limit")
    if isinstance(exc, discord.HTTPException):
        where = f"Discord {exc.status} (code {exc.code})"
        if exc.status == 429:
            return RateLimited(retry_after(exc), where)
        if exc.code in REFUSED_CODES or exc.status == 403:
            return DeliveryRefused(f"{where}: {exc.text}")
        if exc.code == _INVALID_FORM and "content" in exc.text and "length" in exc.text:
            return MessageTooLong(f"{where}: {exc.text}")
        return DeliveryFailed(f"{where}: {exc.text}")
    if isinstance(exc, aiohttp.ClientError | OSError | asyncio.TimeoutError):
        return DeliveryFailed(f"Discord unreachable: {type(exc).__name__}")
    return DeliveryFailed(f"Discord call failed: {type(exc).__name__}: {exc}")
