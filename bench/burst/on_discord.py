"""Discord's side: the fake Discord (gateway and REST), and people each in a DM with the bot.

A DM is a conversation of its own for the relay and for the naive bot alike; the answer shows as a
message and its edits (``POST``/``PATCH`` of ``/channels/{id}/messages``), timed as each call arrives.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench.burst.platform import NothingToWatch
from bench.burst.stats import Timeline
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_payloads import Channel, user

__all__ = ["DiscordSide"]

FIRST_USER = 111_000_000_000_100_000
FIRST_DM = 720_000_000_000_100_000
#: discord.py waits this long for the servers' GUILD_CREATE before it is ready (its default, 2 s).
GUILD_READY_S = 2.5


class DiscordSide(NothingToWatch):
    name = "discord"

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.fake = FakeDiscord()
        self.count = 0
        self.identified = False
        self.fake.on_request.append(self._seen)

    async def start(self) -> None:
        await self.fake.start()

    async def close(self) -> None:
        await self.fake.close()

    def people(self, count: int) -> None:
        # As ``FakeDiscord.dm`` makes a DM, without its search of every channel for one that exists
        # (quadratic over ten thousand people).
        for i in range(self.count, count):
            uid = FIRST_USER + i
            self.fake.users[uid] = user(uid, f"person{i}")
            self.fake.channels[FIRST_DM + i] = Channel(FIRST_DM + i, 1, owner_id=uid, name="")
        self.count = max(self.count, count)

    def relay_settings(self) -> dict[str, Any]:
        return {"enabled": True, "api_base_url": self.fake.api_base, "gateway_url": self.fake.gateway_url,
                "allowed_user_ids": [FIRST_USER + i for i in range(self.count)]}

    def env(self) -> dict[str, str]:
        return {"DISCORD_BOT_TOKEN": self.fake.token}

    def naive_args(self) -> list[str]:
        return ["--api", self.fake.api_base, "--gateway", self.fake.gateway_url]

    async def write(self, i: int, text: str) -> None:
        if not self.identified:  # Discord sends a message on the gateway only to a bot connected then
            await self.fake.connected(60)
            await asyncio.sleep(GUILD_READY_S)
            self.identified = True
        self.timeline.written(i)
        await self.fake.say(FIRST_DM + i, FIRST_USER + i, text)

    def _seen(self, method: str, path: str, body: dict[str, Any]) -> None:
        parts = path.strip("/").split("/")
        self.timeline.call(f"{method} {'/'.join(p if not p.isdigit() else '{id}' for p in parts[:4])}")
        if method in ("POST", "PATCH") and parts[0] == "channels" and len(parts) >= 3 and parts[2] == "messages":
            self.timeline.shown(int(parts[1]) - FIRST_DM, str(body.get("content") or ""))
        # The fake keeps every call for the tests; a long run needs only what the Timeline took.
        self.fake.calls.clear()
