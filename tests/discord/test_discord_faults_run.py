"""``acp-relay run`` against the fake Discord, killed while it opens the thread for a mention.

The mention is journaled before the thread is opened, and the channel's position moves past it only
after: a relay killed in between (before Discord made the thread, or after) answers the mention once
after the restart, in its thread, and later messages in that thread are heard without a mention.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.discord.harness import ALICE, prompts
from tests.fakes.discord_api import FakeDiscord
from tests.process import HANG_GUARD_S, Spawn, relay_processes, write_config
from tests.waiting import until

__all__ = ["relay_processes"]


def config(tmp: Path, fake: FakeDiscord) -> Path:
    return write_config(tmp, {"discord": {
        "enabled": True, "allowed_user_ids": [ALICE], "allowed_channel_ids": [next(iter(fake.channels))],
        "api_base_url": fake.api_base, "gateway_url": fake.gateway_url}})


@pytest.mark.parametrize("moment", ["request", "answered"])
async def test_a_relay_killed_while_opening_the_thread_answers_the_mention_once_after_a_restart(
        relay_processes: Spawn, tmp_path: Path, fake_discord: FakeDiscord, moment: str) -> None:
    fake = fake_discord
    channel = next(iter(fake.channels))
    path = config(tmp_path, fake)
    first = await relay_processes(path, DISCORD_BOT_TOKEN=fake.token)
    await fake.connected(HANG_GUARD_S)
    await until(lambda: fake.commands, "the first relay is ready", timeout=HANG_GUARD_S)
    killed = asyncio.Event()

    def kill(method: str, route: str, *_body: object) -> bool:
        if route.endswith("/threads") and not killed.is_set():
            first.kill()
            killed.set()
            return True  # (as the call arrives: Discord never acts on it)
        return False

    (fake.on_request if moment == "request" else fake.on_answered).append(kill)
    asked = await fake.say(channel, ALICE, "text look at the logs", mention=True)
    async with asyncio.timeout(HANG_GUARD_S):
        await killed.wait()
    await first.exited()
    fake.on_request.clear()
    fake.on_answered.clear()
    assert fake.bot_messages(channel) == [] and (fake.thread_for(asked) is None) == (moment == "request")

    second = await relay_processes(path, DISCORD_BOT_TOKEN=fake.token)
    await until(lambda: fake.thread_for(asked) is not None and any("⏱" in m["content"]
                                                                    for m in fake.bot_messages(asked)),
                "the mention is answered in its thread", timeout=HANG_GUARD_S)
    await fake.say(asked, ALICE, "text and in the thread")
    await until(lambda: sum("⏱" in m["content"] for m in fake.bot_messages(asked)) == 2,
                "a later message in the thread is heard", timeout=HANG_GUARD_S)
    assert await second.stop() == 0, second.stderr
    assert prompts(tmp_path / "record.jsonl") == ["text look at the logs", "text and in the thread"]
    assert sum("look at the logs" in m["content"] for m in fake.bot_messages(asked)) == 1, fake.transcript()
