"""``acp-relay run`` with two surfaces stops every one of them, whatever one of them raises on the way out.

Telegram's last ``getUpdates`` (the one that confirms what is stored) is answered with an update the
library cannot read; before, that made Telegram's ``stop_receiving`` raise: the relay exited 1 with
"something went wrong inside the relay" and Slack (after Telegram in the order) was never stopped.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, SlackFake
from tests.fakes.telegram_api import TOKEN, Call, FakeBotApi
from tests.process import Spawn, relay_processes, write_config
from tests.waiting import until

__all__ = ["relay_processes"]

USER = 4242


async def test_a_surface_failing_on_the_way_out_still_lets_every_other_stop_and_the_exit_is_0(
        relay_processes: Spawn, tmp_path: Path) -> None:
    api = await FakeBotApi().start()
    try:
        async with SlackFake() as slack:
            api.private(USER)
            config = write_config(tmp_path, {
                "telegram": {"enabled": True, "allowed_user_ids": [USER], "api_base_url": api.url,
                             "poll_timeout_s": 1},
                "slack": {"enabled": True, "api_base_url": slack.api_url, "allowed_user_ids": ["U0ALICE"]}})
            relay = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN, SLACK_BOT_TOKEN=BOT_TOKEN,
                                          SLACK_APP_TOKEN=APP_TOKEN)
            await slack.wait_connected(timeout=40)
            api.say(USER, "text hello")
            await until(lambda: any("⏱" in m["text"] for m in api.bot_messages(USER)), "answered", timeout=40)

            def last_poll(call: Call) -> None:
                if call.method == "getUpdates" and call.params.get("timeout") == 0:
                    api.unreadable(USER, "written as the relay stopped")

            api.on_request.append(last_poll)
            code = await relay.stop()
            assert code == 0, relay.stderr
            assert "acp-relay: stopped cleanly" in relay.stderr
            assert "went wrong" not in relay.stderr and "Traceback" not in relay.stderr
            assert slack.closed_by_client == 1, "Slack was stopped too"
            assert "written as the relay stopped" not in relay.stderr + relay.log(), "no text logged above debug"
    finally:
        await api.close()
