"""A relay on PostgreSQL whose server goes away (stopped at once, as a crash) while answers are kept in
its ledger for a chat that is down, and while it listens for other relays' messages: the failures are
each one warning line, never a task that dies with a traceback, and once the server is back every kept
answer is delivered, once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from core.store import OutboundRecord, StoreError
from tests.engine.conftest import make_surface
from tests.engine.test_ownership import pg_relay, script
from tests.postgres import PostgresServer
from tests.waiting import until


def _kept(pending: Callable[[], list[OutboundRecord]]) -> bool:
    try:
        return bool(pending())
    except StoreError:  # the server is away, or the relay's connection is still waiting to try again
        return True


async def test_kept_answers_outlast_a_database_outage_and_are_delivered_once_it_is_back(
        tmp_path: Path, own_postgres: PostgresServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    surface = make_surface()
    r = pg_relay(tmp_path, "a", surface, own_postgres.url(), tmp_path / "agent-state")
    await r.start()
    try:
        surface.down = True
        await r.send(script(1))
        await until(lambda: r.store.pending_outbound(), "the answer kept in the ledger")
        own_postgres.halt()
        before = len(caplog.records)

        def redelivery_met_the_outage() -> bool:
            return any(rec.name in ("acp_relay.engine.delivery", "acp_relay.engine.tasks")
                       and ("kept answers" in rec.getMessage() or "redelivery" in rec.getMessage())
                       for rec in caplog.records[before:])

        await until(redelivery_met_the_outage, "a pass of the redelivery met the outage")
        own_postgres.resume()
        surface.down = False
        await until(lambda: not _kept(r.store.pending_outbound), "the ledger worked through", timeout=60)
        assert len(r.with_text("answer-1 ends")) == 1, "delivered once"
        tracebacks = [f"{rec.name}: {rec.getMessage()}" for rec in caplog.records if rec.exc_info]
        assert not tracebacks, tracebacks
    finally:
        await r.close()
