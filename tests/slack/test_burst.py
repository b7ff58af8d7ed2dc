"""Many conversations at once: each one's first words go out to Slack without waiting for the others'."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from tests.fakes.slack_api import SlackFake

from .conftest import CHANNEL, SlackFactory, until

#: More answers than aiohttp's default pool has connections (100).
AT_ONCE = 120


class _SlowToStart(SlackFake):
    """A Slack that answers no ``chat.startStream`` until ``AT_ONCE`` of them are in at the same time."""

    def __init__(self) -> None:
        super().__init__()
        self.starting = 0
        self._all_in = asyncio.Event()

    async def _api(self, request: web.Request) -> web.Response:
        if request.match_info["method"] == "chat.startStream":
            self.starting += 1
            if self.starting >= AT_ONCE:
                self._all_in.set()
            await self._all_in.wait()
        return await super()._api(request)


@pytest.fixture
async def fake_slack() -> AsyncIterator[SlackFake]:
    async with _SlowToStart() as fake:
        yield fake


async def test_the_first_words_of_many_answers_are_out_at_once(slack: SlackFactory) -> None:
    # The relay's Web API calls shared aiohttp's default pool of 100 connections: in a burst every
    # first text past the hundredth waited for another's call to finish (a burst of 1,000 waited
    # seconds there). Here none finishes until all are in, so a capped pool never answers at all.
    relay = await slack()
    asked = [await relay.mention(f"text answer {i}") for i in range(AT_ONCE)]
    await until(lambda: relay.fake.starting >= AT_ONCE, what=f"{AT_ONCE} streams started at once", timeout=30)
    for i, message in enumerate(asked):
        await until(lambda m=message: relay.bot_texts(m.ts, CHANNEL), what=f"answer {i} shown")
        assert relay.bot_texts(message.ts)[0].startswith(f"answer {i}")
