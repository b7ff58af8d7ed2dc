"""``acp-relay run`` starting against a server that answers oddly, or not at all.

An answer the platform library cannot read at start (Telegram's ``getMe``, Discord's
``/users/@me``) is a configuration fact: exit 2 with one sentence naming the surface, the server and
what was wrong (before: "something went wrong inside the relay", exit 1, or a retry loop for ever).
A server that cannot be reached is retried, each try naming the server, until the relay is stopped.
"""

from __future__ import annotations

import socket
from pathlib import Path

from tests.discord.harness import ALICE
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.telegram_api import TOKEN, FakeBotApi
from tests.process import HANG_GUARD_S, Spawn, relay_processes, write_config
from tests.waiting import until

__all__ = ["relay_processes"]


def telegram_config(tmp: Path, url: str) -> Path:
    return write_config(tmp, {"telegram": {"enabled": True, "allowed_user_ids": [4242], "api_base_url": url,
                                           "poll_timeout_s": 1}})


async def test_a_getme_answer_ptb_cannot_read_is_one_sentence_naming_the_server_and_exit_2(
        relay_processes: Spawn, tmp_path: Path) -> None:
    api = await FakeBotApi().start()
    try:
        del api.me["is_bot"]  # what telegram-test-api answers
        relay = await relay_processes(telegram_config(tmp_path, api.url), TELEGRAM_BOT_TOKEN=TOKEN)
        assert await relay.exited() == 2, relay.stderr
    finally:
        await api.close()
    assert (f"acp-relay: telegram: the Bot API server at {api.url} answered getMe with something "
            "python-telegram-bot cannot read (TypeError); check surfaces.telegram.api_base_url\n") in relay.stderr
    assert "Traceback" not in relay.stderr and "went wrong" not in relay.stderr


async def test_doctor_names_a_getme_answer_ptb_cannot_read(relay_processes: Spawn, tmp_path: Path) -> None:
    api = await FakeBotApi().start()
    try:
        del api.me["is_bot"]
        doctor = await relay_processes(telegram_config(tmp_path, api.url), "doctor", TELEGRAM_BOT_TOKEN=TOKEN)
        assert await doctor.exited() == 1, doctor.stderr
    finally:
        await api.close()
    assert (f"$TELEGRAM_BOT_TOKEN present; the Bot API server at {api.url} answered getMe with something "
            "python-telegram-bot cannot read (TypeError)") in doctor.stdout


async def test_a_bot_api_server_that_cannot_be_reached_is_retried_naming_it_until_stopped(
        relay_processes: Spawn, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    relay = await relay_processes(telegram_config(tmp_path, url), TELEGRAM_BOT_TOKEN=TOKEN)
    await until(lambda: relay.log().count(f"the Bot API server at {url} could not be reached") >= 2,
                "a few tries, each naming the server", timeout=HANG_GUARD_S)
    assert await relay.stop() == 0, relay.stderr
    assert "stopped cleanly" in relay.stderr and TOKEN not in relay.log() + relay.stderr


async def test_a_users_me_answer_discord_py_cannot_read_is_one_sentence_naming_the_server_and_exit_2(
        relay_processes: Spawn, tmp_path: Path) -> None:
    fake = await FakeDiscord().start()
    try:
        fake.bot["id"] = "not a number"
        config = write_config(tmp_path, {"discord": {
            "enabled": True, "allowed_user_ids": [ALICE], "api_base_url": fake.api_base,
            "gateway_url": fake.gateway_url}})
        relay = await relay_processes(config, DISCORD_BOT_TOKEN=fake.token)
        assert await relay.exited() == 2, relay.stderr
    finally:
        await fake.close()
    assert (f"acp-relay: discord: the server at {fake.api_base} answered /users/@me with something "
            "discord.py cannot read (ValueError); check surfaces.discord.api_base_url\n") in relay.stderr
    assert "Traceback" not in relay.stderr
