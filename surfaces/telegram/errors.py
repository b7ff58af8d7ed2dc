"""python-telegram-bot's errors as the core's delivery errors, raised ``from`` the SDK's error.

PTB picks the class by HTTP status (400 ``BadRequest``, 403 ``Forbidden``, 401/404
``InvalidToken``, ``RetryAfter`` for flood control) and rewrites the description: ``"Bad
Request: "`` is dropped and the rest lowercased after its first letter. So descriptions are
matched lowercased, by the words Telegram uses.

What PTB raises when it cannot read an answer (a ``KeyError`` from a ``Message`` missing a field, a
``ValueError`` from a date in milliseconds, "Invalid server response" for a body that is not JSON)
says nothing of the call itself; the server's own answer does (``answers``): a 2xx means the call
was carried out, so it becomes ``AnswerUnreadable`` (never a failure, never resent as it is). A
server that says it has no such method raises ``NoSuchMethod``, which a surface remembers.
"""

from __future__ import annotations

import datetime as dtm
import os
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

from core.surface_api import (
    AnswerUnreadable,
    DeliveryError,
    DeliveryFailed,
    DeliveryRefused,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    RateLimited,
)
from surfaces.telegram.answers import Answer, listen

__all__ = ["NoSuchMethod", "delivery_errors", "retry_after_s"]

# PTB 22 hands out ``retry_after`` as a timedelta with this set, and warns on every read without it.
os.environ.setdefault("PTB_TIMEDELTA", "1")

_MARKUP = ("can't parse entities", "can't find end of", "unsupported start tag", "message text is empty",
           "entity_text_invalid", "entities_too_long")
_TOO_LONG = ("message is too long", "text is too long", "message_too_long")
_NOT_MODIFIED = ("message is not modified",)
#: The chat (or topic) will not take anything from this bot, however often it is asked.
_REFUSED = ("chat not found", "bot was kicked", "bot is not a member", "not enough rights",
            "have no rights", "need administrator rights", "topic_closed", "topic_deleted",
            "message thread not found", "chat_write_forbidden", "group chat was deactivated")
#: A 400's words -> the core's error, first match wins.
_BAD_REQUESTS: tuple[tuple[tuple[str, ...], type[DeliveryError]], ...] = (
    (_NOT_MODIFIED, NotModified), (_TOO_LONG, MessageTooLong), (_MARKUP, MarkupRejected), (_REFUSED, DeliveryRefused))


def retry_after_s(exc: RetryAfter) -> float:
    """Seconds to wait, whichever type PTB hands out (an int is deprecated since 22.2)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, dtm.timedelta) else float(value)


def _has(text: str, words: tuple[str, ...]) -> bool:
    return any(w in text for w in words)


class NoSuchMethod(DeliveryFailed):
    """The Bot API server said it does not have this method (an older or a partial server)."""


@contextmanager
def delivery_errors(what: str) -> Iterator[Answer]:
    """Translate PTB's errors raised inside the block; ``what`` names the call for the log. Yields
    the server's answer to the call (the message id of a send whose answer PTB could not read)."""
    with listen() as answer:
        try:
            yield answer
        except Exception as exc:
            if answer.reached and not isinstance(exc, DeliveryError):
                raise AnswerUnreadable(f"{what}: Telegram's answer could not be read ({type(exc).__name__})") from exc
            if answer.says_no_such_method():
                raise NoSuchMethod(f"{what}: the Bot API server has no such method") from exc
            error = _translate(what, exc)
            if error is None:
                raise  # not Telegram's doing (a bug): it goes on as it is
            raise error from exc


def _translate(what: str, exc: Exception) -> DeliveryError | None:
    if isinstance(exc, RetryAfter):
        return RateLimited(retry_after_s(exc), f"{what}: flood control")
    if isinstance(exc, BadRequest):  # before NetworkError, its base class
        text = exc.message.lower()
        for words, kind in _BAD_REQUESTS:
            if _has(text, words):
                return kind(f"{what}: {exc.message}")
        return DeliveryFailed(f"{what}: {exc.message}")
    if isinstance(exc, Forbidden | ChatMigrated):  # removed, blocked, or the group became another chat
        return DeliveryRefused(f"{what}: {exc.message}")
    if isinstance(exc, InvalidToken):  # its message quotes the token: never pass it on
        return DeliveryFailed(f"{what}: Telegram refused the bot token")
    if isinstance(exc, TelegramError):  # NetworkError, TimedOut, Conflict, 5xx: may pass
        return DeliveryFailed(f"{what}: {exc.message}")
    if isinstance(exc, RuntimeError):  # PTB: the bot is not initialised yet (start-up still reaching Telegram)
        return DeliveryFailed(f"{what}: Telegram is not reachable yet")
    return None
