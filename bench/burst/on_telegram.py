"""Telegram's side: the fake Bot API, and people each in a private chat with the bot.

The answer shows as drafts (``sendMessageDraft``) from the relay, as a message and its edits from the
naive bot; either counts as visible text. ``handed`` is when ``getUpdates`` gave the message to the
bot: first text minus it is the bot's own leg, handed minus written the inbound leg.
"""

from __future__ import annotations

import time
from typing import Any

from bench.burst.platform import NothingToWatch
from bench.burst.stats import Timeline
from tests.fakes.telegram_api import TOKEN, Call, FakeBotApi

__all__ = ["TelegramSide"]

FIRST_USER = 1_000_000
TEXT_CALLS = frozenset({"sendMessageDraft", "sendMessage", "editMessageText"})


class TelegramSide(NothingToWatch):
    name = "telegram"

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.api = FakeBotApi()
        self.count = 0
        self.api.on_call.append(self._seen)

    async def start(self) -> None:
        await self.api.start()

    async def close(self) -> None:
        await self.api.close()

    def people(self, count: int) -> None:
        for i in range(self.count, count):
            self.api.private(FIRST_USER + i, f"Person {i}")
        self.count = max(self.count, count)

    def relay_settings(self) -> dict[str, Any]:
        return {"enabled": True, "api_base_url": self.api.url,
                "allowed_user_ids": [FIRST_USER + i for i in range(self.count)]}

    def env(self) -> dict[str, str]:
        return {"TELEGRAM_BOT_TOKEN": TOKEN}

    def naive_args(self) -> list[str]:
        return ["--api", self.api.url]

    async def write(self, i: int, text: str) -> None:
        self.timeline.written(i)
        self.api.say(FIRST_USER + i, text)

    def _seen(self, call: Call) -> None:
        self.timeline.call(call.method)
        if call.method in TEXT_CALLS and call.status == 200:
            self.timeline.shown(int(call.params.get("chat_id", 0)) - FIRST_USER, str(call.params.get("text", "")),
                                at=call.at)
        elif call.method == "getUpdates" and isinstance(call.result, list):
            now = time.monotonic()
            for update in call.result:
                message = update.get("message")
                if message is not None:
                    self.timeline.handed(message["chat"]["id"] - FIRST_USER, at=now)
        # The fake keeps every call for the tests; a long run needs only what the Timeline took.
        self.api.events.clear()
