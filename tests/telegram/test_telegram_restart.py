"""``acp-relay run`` killed with SIGKILL while an answer is on screen, then started again: the answer
is finished where the person sees it, never shown a second time below a cut-off copy; a message
whose tools ran is not sent to the agent again until the person says so.

The fake Bot API calls a hook as each call arrives, before the relay has its answer: the relay is
killed at that exact moment (see test_telegram_process.py for the moments of an update's way in).
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from tests.fakes.telegram_api import TOKEN, Call, FakeBotApi
from tests.process import HANG_GUARD_S, Spawn, relay_processes
from tests.telegram.conftest import USER, until
from tests.telegram.test_telegram_process import answers, prompts, write_config

__all__ = ["relay_processes"]  # the fixture

LONG = "chunks 2000\nsleep 1\ntext  the end"  # about 11,000 characters: three messages


def kill_when(api: FakeBotApi, relay: Any, matches: Any) -> asyncio.Event:
    killed = asyncio.Event()

    def hook(call: Call) -> None:
        if not killed.is_set() and matches(call):
            relay.proc.send_signal(signal.SIGKILL)
            killed.set()

    api.on_request.append(hook)
    return killed


async def test_killed_mid_answer_the_restarted_relay_finishes_it_in_the_same_messages(
        api: FakeBotApi, relay_processes: Spawn, tmp_path: Path) -> None:
    api.private(USER)
    config = write_config(tmp_path, api)
    first = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN)
    sent = lambda: len(api.bot_messages(USER))  # noqa: E731
    killed = kill_when(api, first, lambda call: call.method == "sendMessageDraft" and sent() >= 2)
    api.say(USER, LONG)
    async with asyncio.timeout(HANG_GUARD_S):
        await killed.wait()
    assert await first.exited() == -signal.SIGKILL
    api.on_request.clear()
    before = [m["message_id"] for m in api.bot_messages(USER)]
    assert len(before) == 2 and not answers(api), "two pieces shown, the rest was a draft"

    second = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN)
    await until(lambda: answers(api), "relay 2 finishes the answer", timeout=HANG_GUARD_S)
    assert await second.stop() == 0
    shown = api.bot_messages(USER)
    assert [m["message_id"] for m in shown][:2] == before, "the answer goes on in the messages the person saw"
    whole = "\n\n".join(m["text"] for m in shown)
    assert len(shown) == 3 and whole.count("w0 ") == 1 and whole.count("w1999") == 1, api.transcript(USER)
    assert prompts(tmp_path) == [LONG, LONG]


async def test_killed_after_a_command_ran_it_asks_before_sending_the_message_again(
        api: FakeBotApi, relay_processes: Spawn, tmp_path: Path) -> None:
    api.private(USER)
    config = write_config(tmp_path, api, allowed_user_ids=[USER])
    text = "tool t1 execute rm -rf build\ntool_update t1 completed\ntext cleaned\nsleep 30"
    config.write_text(config.read_text().replace('"cwd"', '"tool_gate": "allow", "cwd"'))
    first = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN)
    killed = kill_when(api, first, lambda call: call.method == "sendMessageDraft" and "cleaned" in str(call.params))
    api.say(USER, text)
    async with asyncio.timeout(HANG_GUARD_S):
        await killed.wait()
    assert await first.exited() == -signal.SIGKILL
    api.on_request.clear()

    second = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN)
    asked = lambda: [m for m in api.bot_messages(USER) if "rm -rf build (execute)" in m["text"]]  # noqa: E731
    await until(asked, "relay 2 asks whether to send it again", timeout=HANG_GUARD_S)
    [question] = asked()
    labels = [b["text"] for row in question["reply_markup"]["inline_keyboard"] for b in row]
    assert labels == ["Send it again", "Leave it"]
    await asyncio.sleep(1.0)  # a replay would have reached the agent by now
    assert prompts(tmp_path) == [text], "not sent again by itself"
    leave = question["reply_markup"]["inline_keyboard"][1][0]["callback_data"]
    api.press(USER, question["message_id"], leave)
    await until(lambda: "Left as it is" in api.messages[(USER, question["message_id"])]["text"],
                "the question shows the decision", timeout=HANG_GUARD_S)
    assert await second.stop() == 0
    assert prompts(tmp_path) == [text]
