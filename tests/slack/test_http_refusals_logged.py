"""Requests with a bad signature are logged once per source per minute, not once each."""

from __future__ import annotations

import json
import logging

import pytest

from .conftest import CHANNEL, SlackFactory


async def test_a_flood_of_forged_requests_is_one_log_line(slack: SlackFactory,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    relay = await slack(mode="http")
    msg = relay.fake.user_message("U0ALICE", CHANNEL, "<@U0BOT> text forged")
    body = json.dumps(relay.fake.event_envelope({"type": "app_mention", "user": "U0ALICE", "text": msg.text,
                                                 "ts": msg.ts, "channel": CHANNEL, "team": "T0FAKE"})).encode()
    with caplog.at_level(logging.INFO):
        for _ in range(100):
            status, _text = await relay.fake.post_http(body, relay.fake.signed_headers(body, secret="not-the-secret"))
            assert status == 401
    refused = [r.getMessage() for r in caplog.records if "refused a request to /slack/events" in r.getMessage()]
    assert len(refused) == 1, refused
    assert refused[0].startswith("refused a request to /slack/events with a missing, stale or wrong signature from ")
    assert relay.prompts() == []
