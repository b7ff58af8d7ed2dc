"""Two relays on one PostgreSQL and one Discord bot: one relay holds the gateway (a lease), the
other stands by and still sends; when the holder stops, the other takes the gateway over."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pytest
from discord.gateway import DiscordWebSocket
from discord.http import Route

from core.config import RelayConfig
from core.store import Store
from core.store.records import STORE_AWAY_HELD
from tests.discord.harness import ALICE, TOKEN_ENV, Relay
from tests.fakes.discord_api import FakeDiscord
from tests.postgres import PostgresServer
from tests.waiting import fast_sleep, until


@dataclass
class PgRelay(Relay):
    url: str = ""
    name: str = ""
    lease_s: float = 1.0

    def config(self) -> RelayConfig:
        config = super().config()
        return config.model_copy(update={"store": config.store.model_copy(
            update={"lease_s": self.lease_s, "relay_name": self.name})})

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


async def test_a_message_written_while_the_database_is_away_is_held_and_answered_once_it_is_back(
        tmp_path: Path, fake_discord: FakeDiscord, own_postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Discord sends a message once: one the relay could not journal while PostgreSQL was down (stopped at
    once, as a crash) is held, its person told once, and answered once the server is back. (The leases
    outlast the outage here, so the relay keeps the gateway and sees the message; one that drops the
    gateway meanwhile reads the message with its catch-up once it holds the gateway again.)"""
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="acp_relay.discord.inbound")
    monkeypatch.setattr(Route, "BASE", Route.BASE)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", DiscordWebSocket.DEFAULT_GATEWAY)
    monkeypatch.setenv(TOKEN_ENV, fake_discord.token)
    relay = PgRelay(tmp_path, fake_discord, url=own_postgres.url(), name="relay-a", reconnect_sleep=fast_sleep,
                    lease_s=120)
    try:
        await relay.start()
        channel = fake_discord.dm(ALICE)
        await fake_discord.say(channel, ALICE, "text answer-1")
        await until(lambda: any("answer-1" in t and "⏱" in t for t in relay.bot_texts(channel)), "answered")
        own_postgres.halt()
        await fake_discord.say(channel, ALICE, "text answer-2")
        await until(lambda: STORE_AWAY_HELD in relay.bot_texts(channel), "the person is told", timeout=30)
        await until(lambda: "refused Discord message" in caplog.text, "tried again", timeout=30)
        own_postgres.resume()
        await until(lambda: any("answer-2" in t and "⏱" in t for t in relay.bot_texts(channel)), "answered",
                    timeout=60)
        await until(relay.idle, "settled", timeout=30)
        texts = relay.bot_texts(channel)
        assert texts.count(STORE_AWAY_HELD) == 1 and sum("answer-2" in t for t in texts) == 1, texts
        assert relay.prompts() == ["text answer-1", "text answer-2"]
        tracebacks = [f"{rec.name}: {rec.getMessage()}" for rec in caplog.records if rec.exc_info]
        assert not tracebacks, tracebacks
    finally:
        await relay.stop()
        print(fake_discord.transcript())  # shown by pytest when the test failed
