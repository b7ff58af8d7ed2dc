"""Taking up, after a restart, a message Slack made for a relay that never heard back (``posting``).

Two ``SlackSurface`` objects over one store stand for the killed relay and the restarted one. The
fake's ``on_request`` hook cancels the first one's call as Slack takes it: the message is made, its
ts never heard back, the mark stays in the store (as a kill leaves it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from core.engine.blocks import Text
from core.engine.host import StoreState
from core.store import Store
from surfaces.slack.keys import Asker, Thread
from surfaces.slack.surface import SlackSurface
from tests.fakes.slack_api import BOT_TOKEN, BOT_USER, TEAM, SlackFake

from .conftest import CHANNEL, DM, USER


def shown(text: str) -> Any:
    return SlackSurface.formatter.render((Text(text),))


@asynccontextmanager
async def relays(tmp_path: Path) -> AsyncIterator[tuple[SlackFake, Store]]:
    async with SlackFake() as fake:
        with Store.open(tmp_path / "relay.db") as store:
            yield fake, store


def relay(fake: SlackFake, store: Store, bot_user: str = BOT_USER) -> SlackSurface:
    return SlackSurface(AsyncWebClient(token=BOT_TOKEN, base_url=fake.api_url), state=StoreState(store, "slack"),
                        bot_user=bot_user)


async def killed_while(fake: SlackFake, method: str, call: Any) -> None:
    """Run ``call`` until Slack takes ``method``: the caller never hears back."""
    task = asyncio.ensure_future(call)

    def hook(called: str, params: dict[str, Any]) -> None:
        if called == method:
            task.cancel()

    fake.on_request.append(hook)
    try:
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        fake.on_request.remove(hook)


def asked(fake: SlackFake, channel: str = DM) -> Thread:
    return Thread(TEAM, channel, fake.user_message(USER, channel, "a question").ts)


async def test_a_stream_taken_up_in_a_dm_is_grown_and_ended_by_edits(tmp_path: Path) -> None:
    async with relays(tmp_path) as (fake, store):
        thread = asked(fake)
        await killed_while(fake, "chat.startStream", relay(fake, store).stream(thread.key, None, shown("first")))
        [orphan] = fake.bot_messages(DM, thread.thread_ts)
        assert orphan.stream == "streaming"

        again = relay(fake, store)
        stream_id = await again.stream(thread.key, None, shown("first words"))
        await again.stream(thread.key, stream_id, shown("first words, and more"))
        assert await again.end_stream(thread.key, stream_id, shown("first words, and more. The end.")) == orphan.ts
        [message] = fake.bot_messages(DM, thread.thread_ts)
        assert message.ts == stream_id == orphan.ts and message.stream == "stopped"
        assert message.shown == "first words, and more. The end."
        assert [m for m, _ in fake.calls].count("chat.startStream") == 1


async def test_the_message_is_found_on_a_later_page_of_the_thread(tmp_path: Path) -> None:
    async with relays(tmp_path) as (fake, store):
        thread = asked(fake, CHANNEL)
        first = relay(fake, store)

        async def posted_after_a_busy_stretch() -> str:
            for n in range(20):  # people write in the thread between the mark and the post
                fake.user_message(USER, CHANNEL, f"reply {n}", thread.thread_ts)
            return await first.send(thread.key, shown("the answer"))

        await killed_while(fake, "chat.postMessage", posted_after_a_busy_stretch())
        [orphan] = fake.bot_messages(CHANNEL, thread.thread_ts)
        assert await relay(fake, store).send(thread.key, shown("the answer again")) == orphan.ts
        assert [m.shown for m in fake.bot_messages(CHANNEL, thread.thread_ts)] == ["the answer again"]
        pages = [p for m, p in fake.calls if m == "conversations.replies"]
        assert len(pages) == 2 and pages[1].get("cursor")


async def test_a_message_removed_meanwhile_is_posted_anew(tmp_path: Path) -> None:
    async with relays(tmp_path) as (fake, store):
        thread = asked(fake, CHANNEL)
        await killed_while(fake, "chat.postMessage", relay(fake, store).send(thread.key, shown("the answer")))
        [orphan] = fake.bot_messages(CHANNEL, thread.thread_ts)
        fake.fail_next("chat.update", "message_not_found")
        ts = await relay(fake, store).send(thread.key, shown("the answer again"))
        assert ts != orphan.ts and fake.get(CHANNEL, ts) is not None


async def test_killed_before_slack_took_the_call_the_piece_is_posted_and_nothing_known_is_taken(
        tmp_path: Path) -> None:
    """The mark stands, but Slack made nothing: the message the relay did hear back about stays."""
    async with relays(tmp_path) as (fake, store):
        thread = asked(fake, CHANNEL)
        first = relay(fake, store)
        known = await first.send(thread.key, shown("first piece"))
        fake.fail_next("chat.postMessage", "internal_error", status=500)  # no message made
        await killed_while(fake, "chat.postMessage", first.send(thread.key, shown("second piece")))
        ts = await relay(fake, store).send(thread.key, shown("second piece"))
        assert ts != known
        assert [m.shown for m in fake.bot_messages(CHANNEL, thread.thread_ts)] == ["first piece", "second piece"]


async def test_an_app_that_does_not_know_its_member_id_posts_again_and_says_so_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with relays(tmp_path) as (fake, store):
        threads = [asked(fake, CHANNEL), asked(fake, CHANNEL)]
        for thread in threads:
            await killed_while(fake, "chat.postMessage", relay(fake, store).send(thread.key, shown("answer")))
        again = relay(fake, store, bot_user="")  # auth.test failed at start
        with caplog.at_level(logging.INFO, "acp_relay.slack"):
            for thread in threads:
                await again.send(thread.key, shown("answer"))
        assert all(len(fake.bot_messages(CHANNEL, t.thread_ts)) == 2 for t in threads)
        said = [r for r in caplog.records if "read a thread" in r.getMessage()]
        assert len(said) == 1 and said[0].levelno == logging.WARNING


async def test_a_channel_stream_for_the_asker_takes_up_a_plain_message(tmp_path: Path) -> None:
    async with relays(tmp_path) as (fake, store):
        thread = asked(fake, CHANNEL)
        await killed_while(fake, "chat.postMessage", relay(fake, store).send(thread.key, shown("plain")))
        again = relay(fake, store)
        stream_id = await again.stream(thread.key, None, shown("streamed"), origin=Asker(USER))
        assert await again.end_stream(thread.key, stream_id, shown("streamed, ended")) == stream_id
        assert [m.shown for m in fake.bot_messages(CHANNEL, thread.thread_ts)] == ["streamed, ended"]


@pytest.mark.parametrize("refusal", ["ratelimited", "not_in_channel"])
async def test_a_refused_read_of_the_thread_posts_again(tmp_path: Path, refusal: str) -> None:
    async with relays(tmp_path) as (fake, store):
        thread = asked(fake, CHANNEL)
        await killed_while(fake, "chat.postMessage", relay(fake, store).send(thread.key, shown("the answer")))
        status, times = (429, 2) if refusal == "ratelimited" else (200, 1)  # the relay's client waits out one 429
        fake.fail_next("conversations.replies", refusal, status=status, retry_after=0, times=times)
        ts = await relay(fake, store).send(thread.key, shown("the answer"))
        assert [m.ts for m in fake.bot_messages(CHANNEL, thread.thread_ts)][-1] == ts
        assert len(fake.bot_messages(CHANNEL, thread.thread_ts)) == 2


async def test_a_store_that_cannot_be_written_holds_no_message_back(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with SlackFake() as fake:
        store = Store.open(tmp_path / "relay.db")
        surface = relay(fake, store)
        store.close()  # as a database gone: every write fails
        thread = asked(fake, CHANNEL)
        with caplog.at_level(logging.WARNING, "acp_relay.slack"):
            first = await surface.send(thread.key, shown("first"))
            second = await surface.send(thread.key, shown("second"))
        assert [m.ts for m in fake.bot_messages(CHANNEL, thread.thread_ts)] == [first, second]
        assert len([r for r in caplog.records if "posting mark" in r.getMessage()]) == 1
