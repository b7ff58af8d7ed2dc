"""The one duplicate the chaos runs accept, and only on Telegram: a message Telegram made just before a
kill that no later call names (the relay died before storing it; Telegram takes no idempotency key for
a new message, as the README says). Everything else shown twice stays a duplicate: a copy made long
before a kill, or one the relay edited or deleted later (it knew it).
"""

from __future__ import annotations

import asyncio
import time

import aiohttp

from tests.chaos.harness import UNHEARD_WINDOW_S
from tests.chaos.platforms import platform
from tests.fakes.telegram_api import TOKEN


async def _call(session: aiohttp.ClientSession, url: str, method: str, **params: object) -> dict[str, object]:
    async with session.post(f"{url}/bot{TOKEN}/{method}", json=params) as response:
        body = await response.json()
    result: dict[str, object] = body["result"]
    return result


async def test_only_a_telegram_message_made_just_before_a_kill_and_never_named_again_is_unheard() -> None:
    async with platform("telegram") as fake, aiohttp.ClientSession() as session:
        chat, url = fake.chats[0][0], fake.api.url
        await _call(session, url, "sendMessage", chat_id=chat, text="answer-1 begins, long before the kill")
        await asyncio.sleep(2 * UNHEARD_WINDOW_S)  # made well before the kill below
        stored = await _call(session, url, "sendMessage", chat_id=chat, text="answer-2 begins, edited later")
        await _call(session, url, "sendMessage", chat_id=chat, text="answer-3 begins, never heard of")
        kill = time.monotonic()
        await _call(session, url, "editMessageText", chat_id=chat, message_id=stored["message_id"],
                    text="answer-2 begins, edited after the restart")

        assert fake.unheard([kill], UNHEARD_WINDOW_S) == ["answer-3 begins, never heard of"]
        assert fake.unheard([kill + 10 * UNHEARD_WINDOW_S], UNHEARD_WINDOW_S) == [], "a kill long after"
        first = next(c.at for c in fake.api.events if c.method == "sendMessage")
        assert fake.unheard([first - 0.001], UNHEARD_WINDOW_S) == [], "a kill before any was made"


async def test_discord_and_slack_have_no_unheard_window() -> None:
    for name in ("discord", "slack"):
        async with platform(name) as fake:
            assert fake.unheard([time.monotonic()], UNHEARD_WINDOW_S) == []
