"""discord.py's rate-limit records, let go in amortized time.

discord.py keeps a record (a ``Ratelimit``) per route and channel. Whenever it opens a new one while
it holds 256 or more, it walks every record for those idle five minutes. A relay that served
thousands of conversations within five minutes walked thousands of records for each new
conversation's first call: 77% of its CPU after 5,000 conversations (``bench/bench_burst.py
--profile``). ``amortize`` lets that walk run only once the records have doubled since the last one:
the same idle records go, a new record costs a constant on average, and at most about twice the
records still in use are kept.
"""

from __future__ import annotations

from discord.http import HTTPClient

__all__ = ["amortize"]

#: discord.py's own threshold: below it, it never walks the records.
_FLOOR = 256


def amortize(http: HTTPClient) -> None:
    """Make ``http`` walk its records for idle ones only once they have doubled since the last walk."""
    walk = http._try_clear_expired_ratelimits
    due = _FLOOR

    def clear_when_doubled() -> None:
        nonlocal due
        if len(http._buckets) < due:
            return
        walk()
        due = max(_FLOOR, 2 * len(http._buckets))

    http._try_clear_expired_ratelimits = clear_when_doubled  # type: ignore[method-assign]
