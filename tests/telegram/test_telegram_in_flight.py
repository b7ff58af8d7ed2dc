"""Bot API calls in flight are capped (issue 24): with hundreds of answers streaming at once, httpx's
connection pool re-scanned every pooled connection and waiting request on each call's start and end
(73% of the relay's samples in a burst of 300). Calls beyond the cap wait their turn, in order."""

from __future__ import annotations

import asyncio

from surfaces.telegram.running import IN_FLIGHT, build_application
from surfaces.telegram.settings import TelegramConfig
from tests.fakes.telegram_api import TOKEN, FakeBotApi
from tests.telegram.conftest import USER
from tests.waiting import until


async def test_calls_beyond_the_cap_wait_and_all_of_them_go(api: FakeBotApi) -> None:
    api.private(USER)
    app = build_application(TOKEN, TelegramConfig(enabled=True, allowed_user_ids=[USER], api_base_url=api.url))
    async with app:
        api.held = asyncio.Event()  # the server answers nothing until the test says so
        calls = 3 * IN_FLIGHT
        sending = asyncio.gather(*(app.bot.send_message(USER, f"message {i}") for i in range(calls)))
        await until(lambda: api.in_flight >= IN_FLIGHT, what="the first calls at the server")
        for _ in range(20):  # the loop turns over: anything not held back by the cap reaches the server
            await asyncio.sleep(0)
        api.held.set()
        sent = await sending
    assert api.most_in_flight == IN_FLIGHT, f"{api.most_in_flight} calls in flight at once"
    assert [m.text for m in sent] == [f"message {i}" for i in range(calls)]
