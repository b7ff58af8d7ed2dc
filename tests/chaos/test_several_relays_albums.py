"""Telegram albums (and a draft's Stop button) through one webhook address in front of several relays on
one PostgreSQL.

Telegram posts a chat's updates one at a time, and an album is an update a part: behind a load
balancer (here a round-robin proxy in front of three whole ``acp-relay run`` processes), one album's
parts reach different relays, and the person's next message yet another, one that kept no part of
it. Each relay keeps the parts it receives in the shared store; the album must still reach the agent
as one message, answered once, and before the message the person sent after it. Before, the relay
that received that message knew only the albums it kept itself: it answered the message at once, and
the album a second later.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from tests.chaos.platforms import TelegramChaos
from tests.chaos.several import Cluster, RoundRobin
from tests.chaos.test_several_relays_ingress import port_open
from tests.fakes.telegram_api import FakeBotApi
from tests.postgres import PostgresServer
from tests.telegram.test_telegram_turns import finals
from tests.waiting import until

JPEG = b"\xff\xd8" + b"\0" * 64


async def test_an_albums_parts_spread_over_relays_are_one_message_answered_before_the_next(
        tmp_path: Path, postgres: PostgresServer) -> None:
    api = await FakeBotApi().start()
    try:
        telegram = TelegramChaos(api)
        chat, user, _ = telegram.chats[0]
        url = postgres.schema_url("tgalbums")
        cluster = Cluster(tmp_path, url, None, telegram, count=3)
        async with RoundRobin([f"http://127.0.0.1:{port}" for port in cluster.ports]) as proxy:
            try:
                await cluster.start_all(f"{proxy.url}/telegram/hook")
                await until(lambda: all(port_open(p) for p in cluster.ports), "every relay listens", timeout=60)
                api.album(chat, [JPEG, JPEG], caption="report_images", user=user)
                api.say(chat, "text and one more thing", user=user)
                assert await api.deliver() == [200] * 3, "each post answered once kept"
                assert len(set(proxy.sent[-3:])) == 3, "each part, and the message after them, reached another relay"
                await until(lambda: len(finals(api, chat)) >= 2, "both answered", timeout=60)
                await until(lambda: not telegram_kept(url), "the parts let go", timeout=30)
            finally:
                codes = await cluster.stop_all()
    finally:
        await api.close()
    answers = finals(api, chat)
    assert [a.split("\n")[0] for a in answers] == ["images:2", "and one more thing"], api.transcript(chat)
    assert codes == [0, 0, 0]
    for i in range(cluster.count):
        assert "Traceback" not in cluster.log(i)


async def test_a_stop_pressed_on_a_draft_reaches_the_relay_that_streams_it(
        tmp_path: Path, postgres: PostgresServer) -> None:
    """The Stop button's update may reach a relay that does not stream that draft: the conversation's
    turn ends on the relay running it (a control call between relays), once."""
    api = await FakeBotApi().start()
    try:
        telegram = TelegramChaos(api)
        chat, user, _ = telegram.chats[0]
        cluster = Cluster(tmp_path, postgres.schema_url("tgstop"), None, telegram, count=2)
        async with RoundRobin([f"http://127.0.0.1:{port}" for port in cluster.ports]) as proxy:
            try:
                await cluster.start_all(f"{proxy.url}/telegram/hook")
                await until(lambda: all(port_open(p) for p in cluster.ports), "every relay listens", timeout=60)
                api.say(chat, "text working on it\nhang", user=user)
                assert await api.deliver() == [200]
                await until(lambda: chat in api.drafts, "the draft", timeout=60)
                api.stop_draft(chat)
                assert await api.deliver() == [200]
                assert len(set(proxy.sent[-2:])) == 2, "the Stop reached the other relay"
                await until(lambda: finals(api, chat), "the answer, ended", timeout=60)
            finally:
                codes = await cluster.stop_all()
    finally:
        await api.close()
    (answer,) = finals(api, chat)
    assert answer.startswith("working on it") and "Stopped." in answer, api.transcript(chat)
    assert codes == [0, 0]
    for i in range(cluster.count):
        assert "Traceback" not in cluster.log(i)


def telegram_kept(url: str) -> list[str]:
    """The album parts the shared store still keeps."""
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT name FROM offsets WHERE surface = 'telegram' AND name LIKE 'album:%'").fetchall()
    return [str(row[0]) for row in rows]
