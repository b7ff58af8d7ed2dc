"""discord.py's rate-limit records stay cheap to keep (issue 24): past 256 records discord.py scanned
every record for idle ones each time it opened a new one, so every new conversation's first call
walked every conversation of the last five minutes (77% of the relay's CPU after 5,000 known).
Counted as records walked, never timed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from discord.http import HTTPClient

from surfaces.discord.gateway import RelayClient


class _Walked(dict[str, Any]):
    """discord.py's table of records, counting the records its scans walk."""

    walked = 0

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        for pair in super().items():
            _Walked.walked += 1
            yield pair


def _http() -> HTTPClient:
    http = RelayClient().http
    http._buckets = _Walked()
    _Walked.walked = 0
    return http


async def test_a_new_record_does_not_walk_every_record_kept() -> None:
    http = _http()
    for i in range(5000):  # a request in flight on every channel: none may go
        http.get_ratelimit(f"POST /channels/{i}/messages:{i}").outgoing = 1
    assert len(http._buckets) == 5000
    assert _Walked.walked / 5000 <= 4, f"{_Walked.walked / 5000:.0f} records walked per new record"


async def test_records_idle_five_minutes_still_go() -> None:
    http = _http()
    loop = asyncio.get_running_loop()
    for i in range(2000):
        http.get_ratelimit(f"POST /channels/{i}/messages:{i}")._last_request = loop.time() - 400
    for i in range(2000, 6000):
        http.get_ratelimit(f"POST /channels/{i}/messages:{i}")
    assert len(http._buckets) <= 4000, "the idle records went, at the latest when the records doubled"
    assert all(int(key.split("/")[2]) >= 2000 for key in http._buckets)


# A record whose window is over and that no request holds says nothing a fresh one would not (a fresh
# one starts at one request at a time and learns the limit from the first answer): it goes at the next
# walk, not five minutes later (issue 24: three records per conversation for five minutes were 30 MiB
# after 10,000 conversations).

def _fill(http: HTTPClient, first: int, count: int) -> None:
    for i in range(first, first + count):
        http.get_ratelimit(f"POST /channels/{i}/messages:{i}")


async def test_records_done_with_go_at_the_next_walk() -> None:
    http = _http()
    _fill(http, 0, 6000)
    assert len(http._buckets) < 600, f"{len(http._buckets)} records kept of 6,000 no request holds"


async def test_the_record_just_opened_stays() -> None:
    http = _http()
    _fill(http, 0, 255)
    opened = http.get_ratelimit("POST /channels/999/messages:999")  # the 256th: a walk runs
    assert len(http._buckets) == 1
    assert http.get_ratelimit("POST /channels/999/messages:999") is opened


async def test_records_in_use_or_in_an_open_window_stay() -> None:
    http = _http()
    loop = asyncio.get_running_loop()
    sending = http.get_ratelimit("POST /channels/1/messages:1")
    sending.outgoing = 1
    waiting = http.get_ratelimit("POST /channels/2/messages:2")
    waiting._pending_requests.append(loop.create_future())
    exhausted = http.get_ratelimit("POST /channels/3/messages:3")
    exhausted.remaining, exhausted.expires = 0, loop.time() + 20  # Discord said: no more for 20 s
    sleeping = http.get_ratelimit("POST /channels/4/messages:4")
    await sleeping._sleeping.acquire()  # waiting out its window after the last token
    over = http.get_ratelimit("POST /channels/5/messages:5")
    over.remaining, over.expires = 0, loop.time() - 1  # its window is over: the limit is back
    _fill(http, 100, 600)
    kept = {int(key.split("/")[2]) for key in http._buckets}
    assert {1, 2, 3, 4} <= kept
    assert 5 not in kept


async def test_an_open_window_still_holds_back_the_next_request() -> None:
    """The record that says "no more until the window ends" is the one the next request finds."""
    http = _http()
    loop = asyncio.get_running_loop()
    exhausted = http.get_ratelimit("POST /channels/3/messages:3")
    exhausted.remaining, exhausted.expires = 0, loop.time() + 20
    _fill(http, 100, 2000)
    assert http.get_ratelimit("POST /channels/3/messages:3") is exhausted
    with_limit = asyncio.create_task(exhausted.acquire())
    await asyncio.sleep(0)
    assert not with_limit.done(), "the request waits for the window"
    with_limit.cancel()


async def test_no_record_goes_while_the_global_limit_holds_requests() -> None:
    """Requests waiting for the global limit hold their record without marking it: none may go."""
    http = _http()
    http._global_over = asyncio.Event()  # cleared: Discord's global limit is on
    _fill(http, 0, 1000)
    assert len(http._buckets) == 1000
    http._global_over.set()
    _fill(http, 1000, 1)
    assert len(http._buckets) == 1
