"""The gateway connection: refused intent and token end the run with one sentence; other
disconnects reconnect, are logged, and lose nothing."""

from __future__ import annotations

import asyncio
import logging

import pytest

from core.engine.surface import StartupError
from tests.discord.harness import ALICE, RelayFactory, until
from tests.fakes.discord_api import FakeDiscord

FATAL_GUARD_S = 15.0


async def test_a_refused_message_content_intent_is_fatal_and_names_the_portal_setting(
        relay: RelayFactory, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    fake_discord.refuse_intents = True
    r = await relay(wait_ready=False)
    with caplog.at_level(logging.WARNING, logger="acp_relay"):
        error = await asyncio.wait_for(r.launched.fatal(), FATAL_GUARD_S)
        await asyncio.sleep(0.1)  # the disconnect event runs in its own task
    assert isinstance(error, StartupError)
    text = str(error)
    assert "Message Content" in text and "Developer Portal" in text and "\n" not in text
    assert fake_discord.identifies == 1  # no reconnect storm: refused once, stopped
    assert "reconnecting" not in caplog.text


async def test_a_token_refused_at_login_or_by_the_gateway_is_fatal_and_names_the_config_key(
        relay: RelayFactory, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_discord.refuse_token_at_gateway = True
    r = await relay(wait_ready=False)
    error = await asyncio.wait_for(r.launched.fatal(), FATAL_GUARD_S)
    assert "$DISCORD_BOT_TOKEN" in str(error) and "surfaces.discord.token_env" in str(error)
    await r.stop()
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "not-the-token")
    r = await relay(wait_ready=False)
    error = await asyncio.wait_for(r.launched.fatal(), FATAL_GUARD_S)
    assert "surfaces.discord.token_env" in str(error)
    assert fake_discord.calls_to("GET", "/users/@me")  # refused at login, before any gateway
    assert fake_discord.token not in str(error) and "not-the-token" not in str(error)


async def test_a_gateway_disconnect_mid_turn_resumes_and_loses_nothing(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text before the drop\nsleep 0.6\ntext  after the drop")
    await until(lambda: any("before the drop" in t for t in r.bot_texts(dm)), "streaming")
    with caplog.at_level(logging.WARNING, logger="acp_relay"):
        await r.fake.drop(4000)
        await r.fake.say(dm, ALICE, "written while disconnected")  # replayed to the resumed session
        await r.fake.connected()
        await until(lambda: any("echo: written while disconnected" in t for t in r.bot_texts(dm)), "answered")
        await r.settled()
    assert r.fake.resumes == 1 and r.fake.identifies == 1
    assert "Discord gateway connection lost (close code 4000); reconnecting" in caplog.text
    assert "Discord gateway connection resumed" in caplog.text
    texts = r.bot_texts(dm)
    assert sum("after the drop" in t for t in texts) == 1
    assert sum("echo: written while disconnected" in t for t in texts) == 1
    assert r.prompts().count("written while disconnected") == 1


async def test_a_session_discord_invalidated_fetches_what_was_written_meanwhile(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "first")
    await until(lambda: any("echo: first" in t for t in r.bot_texts(dm)), "the first answer")
    await r.settled()
    r.fake.invalidate_resume = True
    await r.fake.drop(4000)
    r.fake.add_message(dm, ALICE, "sent in the gap")  # never dispatched: a new session does not replay
    await until(lambda: any("echo: sent in the gap" in t for t in r.bot_texts(dm)), "fetched and answered")
    await r.settled()
    assert r.fake.identifies == 2
    assert r.prompts() == ["first", "sent in the gap"]
