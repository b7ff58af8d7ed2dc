"""What slack-sdk and slack-bolt log through the relay's loggers: no debug line is formatted that no
handler keeps (both libraries look at a logger's own level, not the level in effect), and with debug
logging on at start their lines still show."""

from __future__ import annotations

import logging

import pytest

from surfaces.slack.launching import web_client
from surfaces.slack.settings import SlackConfig
from tests.fakes.slack_api import BOT_TOKEN, SlackFake

from .conftest import CHANNEL, SlackFactory

SDK, BOLT = "acp_relay.slack.sdk", "acp_relay.slack.bolt"
#: What slack-sdk logs at DEBUG before each Web API request.
SENDING = "Sending a request"


async def test_without_debug_logging_the_libraries_format_no_debug_line_per_call(
        slack: SlackFactory, caplog: pytest.LogCaptureFixture) -> None:
    # slack-sdk formats every request and Slack's answer (headers, the text) into a debug line when
    # its logger's own ``level`` is DEBUG or below; a named logger's own level is NOTSET (0).
    caplog.set_level(logging.INFO)
    relay = await slack()
    client = relay.running.surface.client
    assert client.logger.name == SDK and client.logger.level == logging.INFO
    assert logging.getLogger(BOLT).level == logging.INFO
    await client.chat_postMessage(channel=CHANNEL, text="no debug line")
    assert not [r for r in caplog.records if r.name == SDK and r.levelno == logging.DEBUG]


async def test_with_debug_logging_on_at_start_the_sdk_still_logs_its_requests(
        fake_slack: SlackFake, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = web_client(SlackConfig(api_base_url=fake_slack.api_url), BOT_TOKEN)
    await client.chat_postMessage(channel=CHANNEL, text="with a debug line")
    assert [r for r in caplog.records if r.name == SDK and SENDING in r.getMessage()]
    caplog.set_level(logging.INFO)  # a client made afterwards follows the level in effect then
    assert web_client(SlackConfig(api_base_url=fake_slack.api_url), BOT_TOKEN).logger.level == logging.INFO
