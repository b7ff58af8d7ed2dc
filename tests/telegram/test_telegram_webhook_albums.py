"""Albums through a webhook. Telegram posts a chat's updates one at a time, each once the one before
was answered (the fake's ``deliver`` posts so), and an album is an update a part: the relay keeps each
part in its store, answers the post, and takes the album in as one message once no part came for a
moment, or at once when the chat's next update comes. Before, each part was a message of its own: the
agent read the caption with the first photo alone and the person got an answer a photo.

The last test kills ``acp-relay run`` with SIGKILL while it keeps an album's parts: the relay started
again answers the album, once.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from surfaces.telegram import albums
from tests.fakes.telegram_api import TOKEN, FakeBotApi
from tests.full_store import locked
from tests.process import HANG_GUARD_S, Spawn, relay_processes
from tests.telegram.conftest import USER, TgFactory, TgRelay, on_a_webhook, until
from tests.telegram.test_telegram_process import prompts, write_config
from tests.telegram.test_telegram_store_refused import HELD
from tests.telegram.test_telegram_turns import finals

__all__ = ["relay_processes"]  # the fixture

JPEG = b"\xff\xd8" + b"\0" * 64


def kept(r: TgRelay) -> dict[str, str]:
    """The album parts the relay's store keeps."""
    return r.store.offsets("telegram", "album:")


def prompt_kinds(r: TgRelay) -> list[list[str]]:
    return [[b["type"] for b in f["params"]["prompt"]] for f in r.frames() if f.get("method") == "session/prompt"]


async def test_an_album_posted_part_by_part_is_one_message_the_agent_reads_whole_and_answers_once(
        tg: TgFactory, api: FakeBotApi, monkeypatch: pytest.MonkeyPatch) -> None:
    r = await on_a_webhook(tg, api, monkeypatch)
    api.private(USER)
    api.album(USER, [JPEG, JPEG], caption="report_images")
    assert await api.deliver() == [200, 200], "each part is answered once kept, before the next is posted"
    await asyncio.sleep(0.3)  # a part that comes a moment later joins it
    api.album(USER, [JPEG])
    assert await api.deliver() == [200]
    await until(lambda: finals(api, USER), "answered")
    await r.settled()
    assert prompt_kinds(r) == [["text", "image", "image", "image"]], "one prompt: the caption and every photo"
    [answer] = finals(api, USER)
    assert answer.startswith("images:3") and len(api.bot_messages(USER)) == 1, "one answer, no receipts"
    assert kept(r) == {}, "the parts are let go once the album is taken in"


async def test_the_chats_next_message_is_answered_after_the_album(
        tg: TgFactory, api: FakeBotApi, monkeypatch: pytest.MonkeyPatch) -> None:
    r = await on_a_webhook(tg, api, monkeypatch)
    api.private(USER)
    api.album(USER, [JPEG, JPEG], caption="report_images")
    api.say(USER, "text and one more thing")
    assert await api.deliver() == [200, 200, 200]
    await until(lambda: len(finals(api, USER)) == 2, "both answered")
    await r.settled()
    assert r.prompts() == ["report_images", "text and one more thing"], "in the order the person sent them"
    assert prompt_kinds(r)[0] == ["text", "image", "image"]


async def test_in_a_group_only_the_album_for_the_bot_is_answered_and_no_part_is_left_kept(
        tg: TgFactory, api: FakeBotApi, monkeypatch: pytest.MonkeyPatch) -> None:
    r = await on_a_webhook(tg, api, monkeypatch)
    group = api.group(-100778)
    api.album(group, [JPEG, JPEG], user=USER, group="11")  # people sharing photos: nothing for the bot
    api.album(group, [JPEG, JPEG, JPEG], caption=f"@{api.me['username']} report_images", user=USER, group="22")
    assert await api.deliver() == [200] * 5
    await until(lambda: finals(api, group), "answered")
    await r.settled()
    [answer] = finals(api, group)
    assert answer.startswith("images:3") and prompt_kinds(r) == [["text", "image", "image", "image"]], answer
    await until(lambda: kept(r) == {}, "both albums let go")


async def test_a_part_the_store_cannot_keep_is_answered_500_and_the_album_taken_once_it_can(
        tg: TgFactory, api: FakeBotApi, monkeypatch: pytest.MonkeyPatch) -> None:
    r = await on_a_webhook(tg, api, monkeypatch, busy_timeout_s=0.1)
    api.private(USER)
    api.album(USER, [JPEG, JPEG], caption="report_images")
    with locked(r.store.path):  # another writer holds the file
        assert await api.deliver() == [500, 500], "not kept: Telegram posts them again"
        assert await api.deliver() == [500, 500]
        await until(lambda: any(t in HELD for t in r.texts(USER)), "the person is told")
    assert await api.deliver() == [200, 200]
    await until(lambda: finals(api, USER), "answered")
    await r.settled()
    assert prompt_kinds(r) == [["text", "image", "image"]]
    assert kept(r) == {}
    assert sum(t in HELD for t in r.texts(USER)) == 1, "told once, not on every post"


async def test_an_album_the_store_refuses_to_take_in_is_offered_again_and_answered_once(
        tg: TgFactory, api: FakeBotApi, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The parts are kept; by the time the album is whole another writer holds the file: the album is
    not journaled, nor are its parts let go, and it is offered again until the store takes it."""
    monkeypatch.setattr(albums, "RETRY_S", 0.2)
    r = await on_a_webhook(tg, api, monkeypatch, busy_timeout_s=0.1)
    api.private(USER)
    api.album(USER, [JPEG, JPEG], caption="report_images")
    assert await api.deliver() == [200, 200]
    with locked(r.store.path):
        await asyncio.sleep(albums.QUIET_S + 1.0)  # whole, and tried while the file is held
        assert r.prompts() == [] and len(kept(r)) == 2
    await until(lambda: finals(api, USER), "answered")
    await r.settled()
    await until(lambda: kept(r) == {}, "the parts let go once the album is journaled")
    assert prompt_kinds(r) == [["text", "image", "image"]], "once"
    assert sum(t in HELD for t in r.texts(USER)) == 1, "its person told once that it will be answered"
    retried = [rec for rec in caplog.records if "could not be taken in yet" in rec.getMessage()]
    assert len(retried) == 1, "offered again every 0.2 s while the file was held, said once"
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


async def test_killed_while_keeping_an_album_the_restarted_relay_answers_it_once(
        api: FakeBotApi, relay_processes: Spawn, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    config = write_config(tmp_path, api, mode="webhook", webhook_url=f"http://127.0.0.1:{port}/telegram/hook",
                          webhook_port=port)
    env = {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_WEBHOOK_SECRET": "s3cret-value_1"}
    api.private(USER)
    first = await relay_processes(config, **env)
    await until(lambda: api.webhook, "setWebhook was called", timeout=HANG_GUARD_S)
    api.album(USER, [JPEG, JPEG, JPEG], caption="report_images")
    assert await api.deliver() == [200, 200, 200]
    first.kill()  # SIGKILL, within the moment the relay waits for more parts
    assert await first.exited() < 0
    assert prompts(tmp_path) == [], "killed before the album was taken in"

    api.webhook = {}
    second = await relay_processes(config, **env)
    await until(lambda: finals(api, USER), "the restarted relay answers the album", timeout=HANG_GUARD_S)
    assert await second.stop() == 0
    assert prompts(tmp_path) == ["report_images"], "once"
    [answer] = finals(api, USER)
    assert answer.startswith("images:3"), api.transcript(USER)
