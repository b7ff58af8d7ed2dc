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


async def test_a_refused_message_content_intent_stops_the_start_with_one_sentence_naming_the_portal_setting(
        relay: RelayFactory, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture) -> None:
    fake_discord.refuse_intents = True
    with caplog.at_level(logging.WARNING, logger="acp_relay"), pytest.raises(StartupError) as refused:
        await relay(wait_ready=False)
    text = str(refused.value)
    assert "Message Content" in text and "Developer Portal" in text and "\n" not in text
    assert fake_discord.identifies == 1  # no reconnect storm: refused once, stopped
    assert "reconnecting" not in caplog.text


async def test_a_token_refused_at_login_or_by_the_gateway_names_the_config_key(
        relay: RelayFactory, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_discord.refuse_token_at_gateway = True
    with pytest.raises(StartupError) as refused:
        await relay(wait_ready=False)
    assert "$DISCORD_BOT_TOKEN" in str(refused.value) and "surfaces.discord.token_env" in str(refused.value)
    fake_discord.refuse_token_at_gateway = False
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "not-the-token")
    with pytest.raises(StartupError) as refused:
        await relay(wait_ready=False)
    assert "surfaces.discord.token_env" in str(refused.value)
    assert fake_discord.identifies == 1  # refused at login, before the gateway
    assert fake_discord.token not in str(refused.value) and "not-the-token" not in str(refused.value)


async def test_a_token_revoked_while_running_ends_the_run_through_fatal(relay: RelayFactory) -> None:
    r = await relay()
    r.fake.refuse_token_at_gateway = True
    r.fake.invalidate_resume = True  # the session cannot resume: the client identifies again
    await r.fake.drop(4000)
    error = await asyncio.wait_for(r.launched.fatal(), FATAL_GUARD_S)
    assert isinstance(error, StartupError) and "surfaces.discord.token_env" in str(error)


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
