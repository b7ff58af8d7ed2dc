"""Issue 23's other ways in, with whole relays on one PostgreSQL:

* Slack in HTTP mode behind a load balancer: Slack posts each event to either relay (a round-robin
  proxy), every post's signature is checked (a forged one is refused and answered nowhere), Slack's
  retry of an event reaches the other relay, and every event is answered once;
* Telegram long polling with several relays: one relay polls (``Host.exclusive``), the others stand
  by (Telegram would answer a second poller 409 Conflict); the poller killed with SIGKILL, another
  relay takes polling over, and no update is answered twice or lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import psycopg

from tests.chaos.platforms import SlackChaos, TelegramChaos
from tests.chaos.several import Cluster, RoundRobin, background, overlaps, shown_counts
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import FakeBotApi
from tests.postgres import PostgresServer
from tests.waiting import until

CONVERSATIONS = 3


def script(n: int) -> str:
    return f"text answer-{n} begins\nchunks 20\nsleep 0.3\ntext  answer-{n} ends"


@contextlib.asynccontextmanager
async def slack_posting(slack: SlackChaos, target: str, forged: list[int]) -> AsyncIterator[None]:
    """Slack's side of HTTP mode: post each queued event, signed, to ``target`` until it is answered
    200 (a retry carries ``X-Slack-Retry-Num``), then once more as a retry (Slack retries an event
    whose answer it did not get in time: the load balancer sends it to the other relay). Before
    each event, a forged copy (another signing secret) whose status is kept in ``forged``."""

    async def post() -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as session:
            while True:
                if not slack.pending:
                    await asyncio.sleep(0.05)
                    continue
                envelope, attempt = slack.pending[0]
                body = json.dumps(envelope).encode()
                fake = json.dumps({**envelope, "event": {**envelope["event"], "text": "forged"}}).encode()
                async with session.post(target, data=fake, headers=slack.fake.signed_headers(fake, secret="x")) as r:
                    forged.append(r.status)
                headers = slack.fake.signed_headers(body)
                if attempt:
                    headers.update({"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": "http_timeout"})
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with session.post(target, data=body, headers=headers) as answer:
                        if answer.status == 200:
                            if attempt:
                                slack.pending.pop(0)
                                slack.acked.append((str(envelope["event"].get("text", "")), attempt))
                            else:  # answered: Slack retries it all the same (its answer came too late)
                                slack.pending[0] = (envelope, attempt + 1)
                            continue
                slack.pending[0] = (envelope, attempt + 1)
                await asyncio.sleep(0.2)

    async with background(post(), "slack-http-posting"):
        yield


async def test_slack_http_mode_behind_a_load_balancer_answers_every_event_once(
        tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.schema_url("slackhttp")
    async with SlackFake() as slack_fake:
        slack = SlackChaos(slack_fake)
        cluster = Cluster(tmp_path, url, slack, None, count=2, slack_mode="http")
        forged: list[int] = []
        backends = [f"http://127.0.0.1:{port}" for port in cluster.slack_ports]
        async with RoundRobin(backends) as proxy:
            try:
                await cluster.start_all()
                for port in cluster.slack_ports:  # both relays serve /slack/events
                    await until(lambda p=port: port_open(p), f"relay on {port} listening", timeout=60)
                async with slack_posting(slack, f"{proxy.url}/slack/events", forged):
                    for n in range(4 * CONVERSATIONS):
                        await slack.write(n % CONVERSATIONS, script(n))
                    await until(lambda: all(shown_counts(slack.shown(), n)[1] for n in range(4 * CONVERSATIONS)),
                                "every answer", timeout=180)
                    await until(lambda: not slack.pending, "every event posted and retried", timeout=60)
                    await asyncio.sleep(2.0)  # a duplicate would be on its way by now
            finally:
                codes = await cluster.stop_all()

    shown = slack.shown()
    duplicated = {n: shown_counts(shown, n) for n in range(4 * CONVERSATIONS) if shown_counts(shown, n) != (1, 1)}
    assert not duplicated, f"(copies beginning, complete) per message: {duplicated}"
    assert codes == [0] * cluster.count
    assert forged and set(forged) == {401}, forged  # every forged post refused, by whichever relay got it
    assert not any("forged" in text for text in shown)
    assert set(proxy.sent) == set(backends)  # both relays took posts
    turns = cluster.turns()
    assert sorted(t.n for t in turns) == list(range(4 * CONVERSATIONS))  # each prompt ran once, in one relay
    assert not overlaps(turns, {}, CONVERSATIONS)
    assert slack.acked and all(attempt >= 1 for _, attempt in slack.acked)  # every event was retried


def port_open(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


async def test_one_relay_polls_telegram_and_another_takes_over_when_it_is_killed(
        tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.schema_url("tgpoll")
    api = await FakeBotApi().start()
    try:
        telegram = TelegramChaos(api)
        cluster = Cluster(tmp_path, url, None, telegram, count=3, telegram_mode="polling")
        try:
            await cluster.start_all()
            await until(lambda: bool(api.calls("getUpdates")), "somebody polling", timeout=60)

            def poller() -> str | None:
                with psycopg.connect(url) as db:
                    rows = db.execute("SELECT owner FROM leases WHERE name LIKE 'telegram:%'"
                                      " AND expires_at > EXTRACT(EPOCH FROM now())").fetchall()
                return str(rows[0][0]) if rows else None

            await until(lambda: poller() is not None, "the poller's lease", timeout=60)
            first = poller()
            assert first is not None
            for n in range(2 * CONVERSATIONS):
                await telegram.write(n % CONVERSATIONS, script(n))
            await until(lambda: all(shown_counts(telegram.shown(), n)[1] for n in range(2 * CONVERSATIONS)),
                        "the answers before the kill", timeout=120)

            def all_completed() -> bool:
                with psycopg.connect(url) as db:
                    return not db.execute("SELECT 1 FROM inbound WHERE completed_at IS NULL").fetchall()

            # (Killed between showing an answer and noting it answered, a relay's message is answered
            # again by the next owner: that window is the chaos tests', not this one's.)
            await until(all_completed, "the answers noted in the journal", timeout=60)
            victim = int(first.removeprefix("relay-"))
            killed_at = time.monotonic()
            await cluster.kill(victim)
            for n in range(2 * CONVERSATIONS, 4 * CONVERSATIONS):  # written while nobody polls
                await telegram.write(n % CONVERSATIONS, script(n))
            await until(lambda: all(shown_counts(telegram.shown(), n)[1] for n in range(4 * CONVERSATIONS)),
                        "every answer", timeout=180)
            second = poller()
            await asyncio.sleep(2.0)  # a duplicate would be on its way by now
        finally:
            codes = await cluster.stop_all()
    finally:
        await api.close()

    shown = telegram.shown()
    duplicated = {n: shown_counts(shown, n) for n in range(4 * CONVERSATIONS) if shown_counts(shown, n) != (1, 1)}
    assert not duplicated, f"(copies beginning, complete) per message: {duplicated}"
    assert second is not None and second != first, (first, second)
    assert [c for i, c in enumerate(codes) if i != victim] == [0] * (cluster.count - 1)
    polls = api.calls("getUpdates")
    # Two pollers at once would end each other's polls with 409 Conflict, and a poller told so says it in
    # its log ("another program is polling this bot"): no 409 at all before the kill, and no relay ever
    # told. A poll its relay gave up on is still answered 409 by the fake once the next poller asks, with
    # nobody listening: the stopping poller's, when stop_all hands polling to the next relay. A passing
    # run has that one; CI once saw two, both after the kill at the same offset, the second most likely
    # a poll whose relay's lease lapsed under load (it stands by, another relay takes over).
    conflicts = [(round(c.at - killed_at, 3), c.params.get("offset")) for c in polls if c.status == 409]
    assert not [at for at, _ in conflicts if at < 0], conflicts
    told = [i for i in range(cluster.count)
            if "another program is polling" in (tmp_path / f"relay-{i}.log").read_text(encoding="utf-8")]
    assert not told, (told, conflicts)
    turns = cluster.turns()
    assert sorted(t.n for t in turns if t.end is not None) == list(range(4 * CONVERSATIONS))
