"""Two relays on one PostgreSQL and one Discord bot: one relay holds the gateway (a lease), the
other stands by and still sends; when the holder stops, the other takes the gateway over."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from discord.gateway import DiscordWebSocket
from discord.http import Route

from core.config import RelayConfig
from core.store import Store
from tests.discord.harness import ALICE, TOKEN_ENV, Relay
from tests.fakes.discord_api import FakeDiscord
from tests.postgres import PostgresServer
from tests.waiting import until


@dataclass
class PgRelay(Relay):
    url: str = ""
    name: str = ""

    def config(self) -> RelayConfig:
        config = super().config()
        return config.model_copy(update={"store": config.store.model_copy(
            update={"lease_s": 1.0, "relay_name": self.name})})

    def open_store(self, config: RelayConfig) -> Store:
        from core.store.postgres import PostgresBackend

        return Store.on(PostgresBackend.connect(self.url))


async def test_one_relay_holds_the_gateway_and_the_other_takes_it_over_when_it_stops(
        tmp_path: Path, fake_discord: FakeDiscord, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Route, "BASE", Route.BASE)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", DiscordWebSocket.DEFAULT_GATEWAY)
    monkeypatch.setenv(TOKEN_ENV, fake_discord.token)
    url = postgres.schema_url("discord")
    relays = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        relays.append(PgRelay(tmp_path / name, fake_discord, url=url, name=f"relay-{name}", startup_wait_s=0.5))
    a, b = relays
    try:
        await a.start()
        await b.start(wait_ready=False)
        channel = fake_discord.dm(ALICE)
        await fake_discord.say(channel, ALICE, "text answer-1")
        await until(lambda: any("answer-1" in t and "⏱" in t for t in a.bot_texts(channel)), "relay a answers")
        assert fake_discord.identifies == 1  # relay b stood by
        assert b.engine.ownership is not None and b.engine.ownership.holder(f"discord:{channel}") == "relay-a"
        await a.stop()  # its leases (the gateway's too) let go
        await until(lambda: fake_discord.identifies == 2, "relay b holds the gateway")
        await until(b.launched.client.is_ready, "relay b is ready")
        await fake_discord.say(channel, ALICE, "text answer-2")
        await until(lambda: any("answer-2" in t and "⏱" in t for t in b.bot_texts(channel)), "relay b answers")
        assert fake_discord.identifies == 2
    finally:
        for r in relays:
            await r.stop()
