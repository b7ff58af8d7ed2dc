"""discord.py's rate-limit records, let go in amortized time once they say nothing.

discord.py keeps a record (a ``Ratelimit``) per route and channel: a conversation has three (its
messages, its edits, its typing indicator). Whenever it opens a new one while it holds 256 or more, it
walks every record for those idle five minutes. That cost twice:

- CPU: a relay that served thousands of conversations within five minutes walked thousands of records
  for each new conversation's first call (77% of its CPU after 5,000 conversations, ``bench/bench_burst.py
  --profile``). The walk now runs only once the records have doubled since the last one: a new record
  costs a constant on average.
- Memory: each record (with its lock and its queue of waiting requests) is about 1 KiB; three per
  conversation for five minutes were 30 MiB after 10,000 conversations (``--heap``).

So the walk lets go of every record that says nothing a fresh one would not: no request holds it or
waits on it, and its window is over (Discord's reset time passed, or Discord never limited it). A
fresh record starts at one request at a time and learns the limit from the first answer, so letting
such a record go never sends more than Discord allows; a record whose window is still open (the
requests left used up until a reset) is kept, and the next request on that route waits for it.
"""

from __future__ import annotations

import asyncio

from discord.http import HTTPClient, Ratelimit

__all__ = ["amortize"]

#: discord.py's own threshold: below it, it never walks the records.
_FLOOR = 256


def _says_nothing(record: Ratelimit, now: float) -> bool:
    """No request holds, waits on or sleeps in ``record``, and its window is over."""
    return (record.outgoing == 0 and not record._pending_requests and not record._sleeping.locked()
            and (record.expires is None or now > record.expires))


def amortize(http: HTTPClient) -> None:
    """Make ``http`` walk its records only once they have doubled since the last walk, and let go of every
    record that says nothing then (not only those idle five minutes)."""
    due = _FLOOR

    def clear_when_doubled() -> None:
        nonlocal due
        records = http._buckets
        # A request waiting for Discord's global limit holds a record it has not marked yet (it took it
        # before that wait): none may go until the limit is over (the next new record walks again).
        # (No event before discord.py logs in: no request either.)
        held = isinstance(http._global_over, asyncio.Event) and not http._global_over.is_set()
        if len(records) < due or held:
            return
        # discord.py calls this right after it opened a record, the last one in the table: that one stays.
        opened = next(reversed(records))
        now = records[opened]._loop.time()
        for key in [k for k, record in records.items() if k != opened and _says_nothing(record, now)]:
            del records[key]
        due = max(_FLOOR, 2 * len(records))

    http._try_clear_expired_ratelimits = clear_when_doubled  # type: ignore[method-assign]
