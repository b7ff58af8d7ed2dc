"""``acp-relay run`` against the fake Slack, killed (``kill -9``) the moment Slack has its acknowledgement.

Slack never sends an acknowledged event again, so an event must be journaled before it is
acknowledged: the relay started again answers it, once. In Socket Mode the kill comes as the ack
arrives over the socket; in HTTP mode as the 200 arrives. An event that was not acknowledged (the
relay was killed first) comes again, as Slack retries it, and is answered once too.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest

from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, BOT_USER, SIGNING_SECRET, TEAM, SlackFake
from tests.process import HANG_GUARD_S, RelayProcess, Spawn, relay_processes, write_config
from tests.waiting import until

from .conftest import CHANNEL, USER

__all__ = ["relay_processes"]

TOKENS = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(fake: SlackFake, thread_ts: str) -> list[str]:
    return [m.shown for m in fake.bot_messages(CHANNEL, thread_ts) if "⏱" in m.shown]


async def started(spawn: Spawn, config: Path, fake: SlackFake, mode: str, port: int, connections: int) -> RelayProcess:
    relay = await spawn(config, **TOKENS)
    if mode == "socket":
        await fake.wait_connected(connections, timeout=HANG_GUARD_S)
    else:
        await until(lambda: _listening(port), "the relay listens", timeout=HANG_GUARD_S)
    return relay


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_relay_killed_as_slack_gets_the_ack_answers_the_message_once_after_a_restart(
        relay_processes: Spawn, tmp_path: Path, mode: str) -> None:
    port = free_port()
    async with SlackFake() as fake:
        fake.http_target = f"http://127.0.0.1:{port}/slack/events"
        config = write_config(tmp_path, {"slack": {"enabled": True, "mode": mode, "api_base_url": fake.api_url,
                                                    "allowed_user_ids": [USER], "http_port": port}})
        first = await started(relay_processes, config, fake, mode, port, 1)
        asked = fake.user_message(USER, CHANNEL, f"<@{BOT_USER}> text the answer\nsleep 0.3\ntext  survives")
        event = fake.event_envelope({"type": "app_mention", "user": USER, "text": asked.text, "ts": asked.ts,
                                     "channel": CHANNEL, "team": TEAM, "event_ts": asked.ts})
        if mode == "socket":
            fake.on_ack.append(lambda _eid: first.kill())
            await fake.push(event)
        else:
            raw = json.dumps(event).encode()
            status, _ = await fake.post_http(raw, fake.signed_headers(raw))
            first.kill()
            assert status == 200
        await first.exited()
        fake.on_ack.clear()
        assert answers(fake, asked.ts) == [], "the first relay was killed before it could answer"

        second = await started(relay_processes, config, fake, mode, port, 2)
        await until(lambda: answers(fake, asked.ts), "the message is answered after the restart", timeout=HANG_GUARD_S)
        await asyncio.sleep(1.0)  # a duplicate would be on its way by now
        assert await second.stop() == 0, second.stderr
    (answer,) = answers(fake, asked.ts)
    assert answer.startswith("the answer survives")
