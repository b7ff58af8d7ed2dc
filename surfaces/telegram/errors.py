"""python-telegram-bot's errors as the core's delivery errors, raised ``from`` the SDK's error.

PTB picks the class by HTTP status (400 ``BadRequest``, 403 ``Forbidden``, 401/404
``InvalidToken``, ``RetryAfter`` for flood control) and rewrites the description: ``"Bad
Request: "`` is dropped and the rest lowercased after its first letter. So descriptions are
matched lowercased, by the words Telegram uses.
"""

from __future__ import annotations

import datetime as dtm
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    RetryAfter,
    TelegramError,
)
from telegram.warnings import PTBDeprecationWarning

from core.engine.surface import (
    DeliveryFailed,
    DeliveryRefused,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    RateLimited,
)

__all__ = ["delivery_errors", "retry_after_s"]

_MARKUP = ("can't parse entities", "can't find end of", "unsupported start tag", "message text is empty",
           "entity_text_invalid", "entities_too_long")
_TOO_LONG = ("message is too long", "text is too long", "message_too_long")
_NOT_MODIFIED = ("message is not modified",)
#: The chat (or topic) will not take anything from this bot, however often it is asked.
_REFUSED = ("chat not found", "bot was kicked", "bot is not a member", "not enough rights",
            "have no rights", "need administrator rights", "topic_closed", "topic_deleted",
            "message thread not found", "chat_write_forbidden", "group chat was deactivated")


def retry_after_s(exc: RetryAfter) -> float:
    """Seconds to wait, whichever type PTB hands out (an int is deprecated since 22.2)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, dtm.timedelta) else float(value)


def _has(text: str, words: tuple[str, ...]) -> bool:
    return any(w in text for w in words)


@contextmanager
def delivery_errors(what: str) -> Iterator[None]:
    """Translate PTB's errors raised inside the block; ``what`` names the call for the log."""
    try:
        yield
    except RetryAfter as exc:
        raise RateLimited(retry_after_s(exc), f"{what}: flood control") from exc
    except BadRequest as exc:  # before NetworkError, its base class
        text = exc.message.lower()
        if _has(text, _NOT_MODIFIED):
            raise NotModified(f"{what}: {exc.message}") from exc
        if _has(text, _TOO_LONG):
            raise MessageTooLong(f"{what}: {exc.message}") from exc
        if _has(text, _MARKUP):
            raise MarkupRejected(f"{what}: {exc.message}") from exc
        if _has(text, _REFUSED):
            raise DeliveryRefused(f"{what}: {exc.message}") from exc
        raise DeliveryFailed(f"{what}: {exc.message}") from exc
    except (Forbidden, ChatMigrated) as exc:  # removed, blocked, or the group became another chat
        raise DeliveryRefused(f"{what}: {exc.message}") from exc
    except InvalidToken as exc:  # its message quotes the token: never pass it on
        raise DeliveryFailed(f"{what}: Telegram refused the bot token") from exc
    except TelegramError as exc:  # NetworkError, TimedOut, Conflict, 5xx: may pass
        raise DeliveryFailed(f"{what}: {exc.message}") from exc
    except RuntimeError as exc:  # PTB: the bot is not initialised yet (start-up still reaching Telegram)
        raise DeliveryFailed(f"{what}: Telegram is not reachable yet") from exc
