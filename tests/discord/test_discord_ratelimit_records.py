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
    for i in range(5000):  # every channel used within five minutes: none may go
        http.get_ratelimit(f"POST /channels/{i}/messages:{i}")
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
