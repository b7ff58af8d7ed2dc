"""Slack on PostgreSQL while the database is away: a reply in a channel thread needs no mention when
the app is part of the thread, which the relay asks of the store when the thread is not in its
memory (after a restart, or a thread another relay joined). While the database is away the store
cannot say: the reply is held, nobody is told (it may be the people's own talk), and once the
database is back it is answered if the thread is the app's and let go if not. Before, the listener
failed on every one of Slack's four deliveries, and the reply was lost after the last."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config import RelayConfig
from core.store import Store
from core.store.records import STORE_AWAY_HELD, STORE_FAILED_HELD
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, SlackFake
from tests.postgres import PostgresServer

from .conftest import CHANNEL, TEAM, USER, SlackRelayUnderTest, delivered, until
from .test_store_refused import HELD_FAST


@dataclass
class PgSlackRelay(SlackRelayUnderTest):
    url: str = ""

    def open_store(self, config: RelayConfig) -> Store:
        from core.store.postgres import PostgresBackend

        return Store.on(PostgresBackend.connect(self.url))


def _reply(relay: SlackRelayUnderTest, thread_ts: str, text: str) -> dict[str, object]:
    """The event of a reply in ``thread_ts`` without a mention (not delivered yet)."""
    msg = relay.fake.user_message(USER, CHANNEL, text, thread_ts=thread_ts)
    return {"type": "message", "channel_type": "channel", "user": USER, "text": text, "ts": msg.ts,
            "thread_ts": thread_ts, "channel": CHANNEL, "team": TEAM, "event_ts": msg.ts}


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_thread_reply_while_the_database_is_away_is_held_quietly_and_answered_only_in_the_apps_thread(
        fake_slack: SlackFake, own_postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, mode: str) -> None:
    caplog.set_level(logging.INFO)
    for name, value in (("SLACK_BOT_TOKEN", BOT_TOKEN), ("SLACK_APP_TOKEN", APP_TOKEN),
                        ("SLACK_SIGNING_SECRET", SIGNING_SECRET)):
        monkeypatch.setenv(name, value)
    url = own_postgres.schema_url("slack")

    async def started() -> PgSlackRelay:  # (one folder: the agent keeps its sessions there, for the next relay)
        return await PgSlackRelay(fake_slack, tmp_path, mode=mode, timings=HELD_FAST, url=url).start()

    first = await started()
    try:
        mention = await first.mention("text the app's thread")
        await first.settled(mention.ts)
    finally:
        await first.close()
    others = fake_slack.user_message(USER, CHANNEL, "a thread of people talking among themselves")
    relay = await started()  # the app's thread is in the store, not in this relay's memory
    try:
        await _through_an_outage(relay, own_postgres, mention.ts, others.ts, caplog)
    finally:
        await relay.close()


async def _through_an_outage(relay: SlackRelayUnderTest, server: PostgresServer, thread_ts: str, others_ts: str,
                             caplog: pytest.LogCaptureFixture) -> None:
    ours, theirs = _reply(relay, thread_ts, "text more in the app's thread"), _reply(relay, others_ts, "lunch?")
    then = _reply(relay, thread_ts, "text and then this")
    told_before = relay.bot_texts(thread_ts)
    server.halt()
    try:
        acked = [await delivered(relay, ours, retry, caplog, event_id="Ev-ours") for retry in range(4)]
        assert acked == [False, False, False, True], "only Slack's last delivery is acknowledged"
        assert await delivered(relay, theirs, 3, caplog, event_id="Ev-theirs"), "held at Slack's last delivery"
        assert await delivered(relay, then, 3, caplog, event_id="Ev-then"), "held behind the first reply"
    finally:
        server.resume()
    await until(lambda: "text and then this" in relay.prompts(), "answered once the database is back")
    await until(lambda: "is not for the relay" in caplog.text, "the people's own reply let go")
    await relay.settled(thread_ts)
    assert relay.prompts()[-2:] == ["text more in the app's thread", "text and then this"], "once each, in order"
    assert "lunch?" not in relay.prompts(), "a reply in a thread that is not the app's reached the agent"
    texts = relay.bot_texts(thread_ts)
    assert texts[:len(told_before)] == told_before, texts
    answers = [i for i, t in enumerate(texts) if t.startswith(("more in the app's thread", "and then this"))]
    assert len(answers) == 2 and texts[answers[0]].startswith("more"), texts
    assert not set(texts) & {STORE_AWAY_HELD, STORE_FAILED_HELD}, "told: it might not have been for the app"
    assert relay.bot_texts(others_ts) == [], "nothing said in the people's own thread"
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"
