"""What the Bot API server answered to the call in progress, for when PTB cannot read it.

PTB raises on an answer it cannot read (a ``Message`` without a field it needs, a date it cannot
convert, a body that is not JSON, no ``result``), and the exception says nothing of whether the
server carried the call out. ``Answers`` is PTB's HTTP request with one addition: it notes the HTTP
status and body of each exchange for whoever is listening in the current task (``listen``), so
``errors.delivery_errors`` can tell "Telegram refused" from "Telegram did it, and said so oddly"
(and find the message id in the odd answer), and a method the server does not have (its own
words, whatever the status) from a passing failure.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from telegram.request import HTTPXRequest, RequestData

from core.surface_api import Listener

__all__ = ["Answer", "Answers", "listen"]

#: How servers say a method does not exist (Telegram: 404 "Not Found: method not found").
_NO_SUCH_METHOD = ("method not found", "not supported", "not implemented", "unknown method")


@dataclass
class Answer:
    """The last exchange of the call in progress (status 0: nothing came back)."""

    status: int = 0
    body: bytes = b""
    _json: Any = field(default=None, repr=False)

    @property
    def reached(self) -> bool:
        """The server answered 2xx: it carried the call out, whatever the body says."""
        return 200 <= self.status <= 299

    def payload(self) -> Any:
        """The body as JSON, or None."""
        if self._json is None and self.body:
            try:
                self._json = json.loads(self.body)
            except ValueError:
                self._json = False
        return self._json or None

    def message_id(self) -> int | None:
        """The id of the message the answer describes, when it has one."""
        data = self.payload()
        result = data.get("result") if isinstance(data, dict) else None
        value = result.get("message_id") if isinstance(result, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def says_no_such_method(self) -> bool:
        """The server said it has no such method (in Telegram's words or another server's)."""
        if self.reached or not self.body:
            return False
        data = self.payload()
        words = (str(data.get("description") or data.get("message") or "") if isinstance(data, dict)
                 else self.body[:500].decode("utf-8", "replace"))
        return any(phrase in words.lower() for phrase in _NO_SUCH_METHOD)


_ANSWERS: Listener[Answer] = Listener("telegram_answer", Answer)
#: ``with listen() as answer:`` notes what the server answers to the calls made inside the block.
listen = _ANSWERS.listen


class Answers(HTTPXRequest):
    """PTB's HTTP request (httpx), noting each answer for ``listen``, with at most ``in_flight`` calls
    under way at once (the others wait here, in order).

    Without a cap, hundreds of answers streaming at once put hundreds of requests into httpcore's
    pool, which re-scans every connection and every waiting request whenever one starts or ends:
    73% of the relay's CPU in a burst of 300 conversations (``bench/bench_burst.py --profile``).
    """

    def __init__(self, *, in_flight: int, **kwargs: Any) -> None:
        super().__init__(connection_pool_size=in_flight, **kwargs)
        self._in_flight = asyncio.Semaphore(in_flight)

    async def do_request(self, url: str, method: str, request_data: RequestData | None = None,
                         read_timeout: Any = HTTPXRequest.DEFAULT_NONE, write_timeout: Any = HTTPXRequest.DEFAULT_NONE,
                         connect_timeout: Any = HTTPXRequest.DEFAULT_NONE,
                         pool_timeout: Any = HTTPXRequest.DEFAULT_NONE) -> tuple[int, bytes]:
        """The exchange, as PTB makes it, once a place is free; noted for a listener in this task."""
        async with self._in_flight:
            status, body = await super().do_request(url, method, request_data, read_timeout, write_timeout,
                                                    connect_timeout, pool_timeout)
        answer = _ANSWERS.current()
        if answer is not None:
            answer.status, answer.body, answer._json = status, body, None
        return status, body
