"""The database lost mid-run (issue 23, "Bad input and faults"): two relays on one PostgreSQL, whose
server is stopped at once (``pg_ctl stop -m immediate``, as a crash) while turns run and people go
on writing, then started again on the same data folder: once for longer than a lease (the leases
run out meanwhile), once for less.

What the issue expects, as people see it: a relay takes no new turn while it cannot journal (the
platform's update stays unconfirmed: Slack redelivers the event, Telegram posts the update again),
lets a running turn finish while it may, and answers everything once the database is back. Every
message is answered exactly once, none is lost, and both relays stop cleanly afterwards.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import psycopg

from tests.chaos.platforms import SlackChaos, TelegramChaos
from tests.chaos.several import Cluster, RoundRobin, overlaps, shown_counts, telegram_pushing
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import FakeBotApi
from tests.postgres import PostgresServer
from tests.waiting import until

CONVERSATIONS = 6  # 3 Slack threads, 3 Telegram chats
ANSWERS = 6 * CONVERSATIONS


def script(n: int, seconds: float) -> str:
    return f"text answer-{n} begins\nchunks 30\nsleep {seconds:.2f}\ntext  answer-{n} ends"


async def test_relays_answer_everything_once_across_a_database_outage(
        tmp_path: Path, own_postgres: PostgresServer) -> None:
    rng = random.Random(2323)
    url = own_postgres.url()
    api = await FakeBotApi().start()
    try:
        async with SlackFake() as slack_fake, SlackChaos(slack_fake).delivering() as slack:
            telegram = TelegramChaos(api)
            cluster = Cluster(tmp_path, url, slack, telegram, count=2)
            backends = [f"http://127.0.0.1:{port}" for port in cluster.ports]
            async with RoundRobin(backends) as proxy, telegram_pushing(telegram):
                try:
                    await cluster.start_all(f"{proxy.url}/telegram")

                    async def write(n: int, seconds: float) -> None:
                        c = n % CONVERSATIONS
                        text = script(n, seconds)
                        await (slack.write(c, text) if c < 3 else telegram.write(c - 3, text))

                    def complete(ns: range) -> bool:
                        now = slack.shown() + telegram.shown()
                        return all(shown_counts(now, n)[1] for n in ns)

                    async def until_answered(ns: range) -> None:
                        try:
                            await until(lambda: complete(ns), "every answer", timeout=180)
                        except AssertionError:
                            now = slack.shown() + telegram.shown()
                            missing = [n for n in ns if not shown_counts(now, n)[1]]
                            raise AssertionError(f"never answered: {missing}") from None

                    for n in range(CONVERSATIONS):  # each conversation's first answer, before the outage
                        await write(n, 0.1)
                    await until(lambda: complete(range(CONVERSATIONS)), "the first answers", timeout=120)

                    # Long turns running in every conversation when the server goes: short ones end
                    # within the lease, long ones outlast it.
                    for n in range(CONVERSATIONS, 2 * CONVERSATIONS):
                        await write(n, rng.choice([1.0, 6.0]))
                    await until(lambda: sum(t.end is None for t in cluster.turns()) >= CONVERSATIONS // 2,
                                "turns running", timeout=60)
                    own_postgres.halt()
                    # People go on writing while it is down (nothing can be journaled).
                    for n in range(2 * CONVERSATIONS, 3 * CONVERSATIONS):
                        await write(n, 0.2)
                        await asyncio.sleep(0.3)
                    await asyncio.sleep(3 * cluster.lease_s)  # the leases run out meanwhile
                    own_postgres.resume()
                    for n in range(3 * CONVERSATIONS, 4 * CONVERSATIONS):  # and after it is back
                        await write(n, 0.2)
                    await until_answered(range(4 * CONVERSATIONS))

                    # Again, shorter than a lease: turns running across it, people writing during it.
                    for n in range(4 * CONVERSATIONS, 5 * CONVERSATIONS):
                        await write(n, 1.0)
                    await until(lambda: sum(t.end is None for t in cluster.turns()) >= CONVERSATIONS // 2,
                                "turns running again", timeout=60)
                    own_postgres.halt()
                    for n in range(5 * CONVERSATIONS, 6 * CONVERSATIONS):
                        await write(n, 0.2)
                    await asyncio.sleep(cluster.lease_s / 3)
                    own_postgres.resume()
                    await until_answered(range(ANSWERS))
                    await asyncio.sleep(2.0)  # a duplicate would be on its way by now
                finally:
                    codes = await cluster.stop_all()
    finally:
        await api.close()

    now = slack.shown() + telegram.shown()
    answers = range(ANSWERS)
    duplicated = {n: shown_counts(now, n) for n in answers if shown_counts(now, n) != (1, 1)}
    assert not duplicated, f"(copies beginning, complete) per message: {duplicated}"
    assert codes == [0] * cluster.count, codes
    # A database away is a fault the relay expects: each failure is a line, never a traceback (the ledger's
    # redelivery and a pickup after listening again once died of it, logged with theirs).
    tracebacks = [i for i in range(cluster.count) if "Traceback" in cluster.log(i)]
    assert not tracebacks, "\n\n".join(cluster.log(i)[-6000:] for i in tracebacks)
    turns = cluster.turns()
    assert not overlaps(turns, {}, CONVERSATIONS), overlaps(turns, {}, CONVERSATIONS)
    with psycopg.connect(url) as db:  # nothing left unanswered in the journal
        left = db.execute("SELECT surface, message_id FROM inbound WHERE completed_at IS NULL").fetchall()
    assert not left, left
