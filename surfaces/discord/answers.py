"""What Discord answered to the call in progress, for when discord.py cannot read it.

discord.py turns a 2xx answer into its objects after the request returned; when the answer is not
what it expects (an author that is a name, a body that is not JSON) the exception it raises (a
``TypeError``, a ``KeyError``) says nothing of the call, which Discord did carry out. ``note``
wraps the client's ``HTTPClient.request`` so that each answer it returned is noted for whoever is
listening in the current task (``listen``): the surface then knows "Discord did it, and said so
oddly" (``AnswerUnreadable``, with the message id when the answer still has one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from core.surface_api import AnswerUnreadable, Listener

__all__ = ["Answer", "listen", "note", "unreadable"]



@dataclass
class Answer:
    """What the last request of the call in progress returned (``returned``: Discord answered 2xx)."""

    returned: bool = False
    data: Any = None
    path: str = ""  # the route that answered (``/users/@me``)

    def message_id(self) -> str | None:
        """The id of the message the answer describes, when it still has one."""
        ident = self.data.get("id") if isinstance(self.data, dict) else None
        return str(ident) if isinstance(ident, str | int) and str(ident).isdigit() else None


_ANSWERS: Listener[Answer] = Listener("discord_answer", Answer)
#: ``HTTPClient.request``, whatever its exact signature.
Request = TypeVar("Request", bound=Callable[..., Awaitable[Any]])
#: ``with listen() as answer:`` notes what Discord answers to the requests made inside the block.
listen = _ANSWERS.listen


def note(request: Request) -> Request:
    """``HTTPClient.request``, noting each answer it returns for ``listen``."""

    async def noted(*args: Any, **kwargs: Any) -> Any:
        data = await request(*args, **kwargs)
        answer = _ANSWERS.current()
        if answer is not None:
            answer.returned, answer.data = True, data
            answer.path = str(getattr(args[0], "path", "")) if args else ""
        return data

    return cast(Request, noted)


def unreadable(what: str, exc: BaseException) -> AnswerUnreadable:
    """The core's error for an answer discord.py could not read (raise it ``from exc``)."""
    return AnswerUnreadable(f"Discord's answer to {what} could not be read ({type(exc).__name__})")
