"""Receiving: the update offset is confirmed only past what is stored, a redelivery is answered
once, strangers are refused once, webhook posts need the secret, and a refused token is fatal."""

from __future__ import annotations

import socket
import sqlite3

import aiohttp
import pytest

from core.engine.surface import StartupError
from tests.fakes.telegram_api import BOT_ID, TOKEN, FakeBotApi
from tests.listening import handshakes_while_held
from tests.telegram.conftest import GROUP, USER, TgFactory, until


def answers(api: FakeBotApi, chat: int) -> list[str]:
    return [m["text"] for m in api.bot_messages(chat) if "⏱" in m["text"]]


def offsets_asked(api: FakeBotApi) -> list[int | None]:
    return [c.params.get("offset") for c in api.calls("getUpdates")]


async def test_the_offset_is_stored_and_a_restart_answers_nothing_again(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    api.say(USER, "text one")
    last = api.pending_updates[-1]["update_id"]
    await until(lambda: answers(api, USER))
    await r.settled()
    assert r.store.get_offset("telegram", f"offset:{BOT_ID}") == str(last + 1)
    await r.restart()
    api.say(USER, "text two")
    await until(lambda: len(answers(api, USER)) == 2)
    await r.settled()
    assert r.prompts() == ["text one", "text two"]
    assert last + 1 in offsets_asked(api)


async def test_an_update_telegram_sends_again_is_answered_once(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    api.private(USER)
    said = api.say(USER, "text only once")
    await until(lambda: answers(api, USER))
    await r.settled()
    api.push({"message": said})  # Telegram resends the same message (a new update id)
    await r.settled()
    assert r.prompts() == ["text only once"]
    assert len(answers(api, USER)) == 1


async def test_an_update_the_store_cannot_take_is_not_confirmed_and_comes_again(api: FakeBotApi,
                                                                               tg: TgFactory) -> None:
    r = await tg(busy_timeout_s=0.1)
    api.private(USER)
    blocker = sqlite3.connect(r.store.path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another writer holds the file: journaling fails
    try:
        said = api.say(USER, "text stored before confirmed")
        update_id = api.pending_updates[0]["update_id"]
        await until(lambda: sum(1 for c in api.events if c.method == "getUpdates") >= 2, "polled again after it failed")
        assert r.launched.receiver.reconnects == 0, "polling goes on: a reconnect would wait longer each time"
        assert [u["message"]["message_id"] for u in api.pending_updates] == [said["message_id"]], "not confirmed"
        assert all(o is None or o <= update_id for o in offsets_asked(api))
        assert not r.prompts()
        assert r.store.get_offset("telegram", f"offset:{BOT_ID}") is None
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await until(lambda: answers(api, USER), "answered once the store works again")
    await r.settled()
    assert r.prompts() == ["text stored before confirmed"]


async def test_a_stranger_is_refused_once_with_their_id_and_never_reaches_the_agent(api: FakeBotApi,
                                                                                   tg: TgFactory) -> None:
    r = await tg()
    api.private(999)
    api.say(999, "text my secret plan")
    await until(lambda: api.bot_messages(999))
    api.say(999, "text again")
    api.group(GROUP)
    api.say(GROUP, "text talking in the group", user=999)
    await r.settled()
    (refusal,) = api.bot_messages(999)
    assert "999" in refusal["text"] and "not allowed" in refusal["text"]
    assert not api.bot_messages(GROUP)
    assert not r.prompts() and "session/new" not in r.methods()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_webhook_mode_takes_posts_with_the_secret_and_refuses_the_rest(
        api: FakeBotApi, tg: TgFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "s3cret-value_1")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    r = await tg(telegram={"mode": "webhook", "webhook_url": url, "webhook_port": port})
    await until(lambda: api.webhook, "setWebhook was called")
    assert api.webhook == {"url": url, "secret_token": "s3cret-value_1"}
    assert not api.calls("getUpdates")
    api.private(USER)
    api.say(USER, "text from a forger")
    assert await api.deliver(secret="wrong") == [403]
    async with aiohttp.ClientSession() as session, session.post(url, json=api.pending_updates[0]) as response:
        assert response.status == 403  # no secret at all
    assert await api.deliver() == [200]
    await until(lambda: answers(api, USER), "the good post is answered")
    await r.settled()
    assert r.prompts() == ["text from a forger"], "answered once, from the post that had the secret"


async def test_a_burst_of_webhook_posts_while_the_relay_is_busy_is_queued_not_dropped(
        api: FakeBotApi, tg: TgFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Telegram's posts arriving all at once while the relay's loop is busy: the kernel keeps every
    handshake for the relay to accept, none waits out a retransmitted SYN (aiohttp's default backlog is 128)."""
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "s3cret-value_1")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    r = await tg(telegram={"mode": "webhook", "webhook_url": url, "webhook_port": port})
    await until(lambda: api.webhook, "setWebhook was called")
    assert handshakes_while_held(port, 300) == 300
    api.private(USER)
    api.say(USER, "text after the burst")  # served once the loop runs again
    assert await api.deliver() == [200]
    await until(lambda: answers(api, USER), "the post is answered")
    await r.settled()


async def test_a_refused_token_is_one_sentence_at_launch_never_a_retry_loop(api: FakeBotApi, tg: TgFactory,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = f"{BOT_ID}:AAHthisTokenIsNotTheOneTelegramKnows00"
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", wrong)
    r = await tg(start=False)
    with pytest.raises(StartupError) as refused:
        await r.start()
    assert str(refused.value) == ("Telegram refused the bot token in TELEGRAM_BOT_TOKEN; copy it again from "
                                  "@BotFather (surfaces.telegram.token_env)")
    assert wrong not in str(refused.value) and TOKEN not in str(refused.value)
    assert [c.method for c in api.events] == ["getMe"]
    r.store.close()


async def test_a_token_revoked_while_running_ends_the_run(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    await until(lambda: api.calls("getUpdates"))
    api.token = "revoked"
    refused = await r.launched.fatal()
    assert "refused the bot token" in str(refused)
