"""Webhook posts without the right secret are logged once per source per minute, not once each."""

from __future__ import annotations

import logging
import socket

import aiohttp
import pytest

from tests.fakes.telegram_api import FakeBotApi
from tests.telegram.conftest import USER, TgFactory, until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_flood_of_forged_webhook_posts_is_one_log_line(
        api: FakeBotApi, tg: TgFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "s3cret-value_1")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    r = await tg(telegram={"mode": "webhook", "webhook_url": url, "webhook_port": port})
    await until(lambda: api.webhook, "setWebhook was called")
    api.private(USER)
    api.say(USER, "text from a forger")
    with caplog.at_level(logging.INFO):
        async with aiohttp.ClientSession() as session:
            for i in range(300):
                headers = {"X-Telegram-Bot-Api-Secret-Token": f"guess-{i}"} if i % 2 else {}
                async with session.post(url, json=api.pending_updates[0], headers=headers) as response:
                    assert response.status == 403
    refused = [r.getMessage() for r in caplog.records if "refused a webhook post" in r.getMessage()]
    assert refused == ["refused a webhook post without the right secret from 127.0.0.1"]
    assert not r.prompts()
