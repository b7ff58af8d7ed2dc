"""``acp-relay run`` as a real process against the fake Bot API: a whole turn (and an edit), a clean stop, a
``kill -9`` at each moment of an update's way in, and the start-up refusals and doctor lines.

The fake server runs in the test's event loop; a hook on its calls kills the relay at an exact
moment (before the relay has read Telegram's answer to that call). Then a second relay starts on
the same store: every message must be answered once, none lost, none twice.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.engine import edit_wording
from tests.fakes.telegram_api import TOKEN, Call, FakeBotApi
from tests.process import HANG_GUARD_S, Spawn, relay_processes
from tests.process import write_config as write_process_config
from tests.telegram.conftest import USER, until

__all__ = ["relay_processes"]


def write_config(tmp: Path, api: FakeBotApi, **telegram: Any) -> Path:
    return write_process_config(tmp, {"telegram": {"enabled": True, "allowed_user_ids": [USER],
                                                   "api_base_url": api.url, "poll_timeout_s": 1, **telegram}})


def answers(api: FakeBotApi) -> list[str]:
    return [m["text"] for m in api.bot_messages(USER) if "⏱" in m["text"]]


def prompts(tmp: Path) -> list[str]:
    path = tmp / "record.jsonl"
    frames = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    return ["\n".join(b.get("text", "") for b in f["params"]["prompt"] if b.get("type") == "text")
            for f in frames if f.get("method") == "session/prompt"]


async def test_a_turn_through_acp_relay_run_and_a_clean_stop(api: FakeBotApi, relay_processes: Spawn,
                                                             tmp_path: Path) -> None:
    api.private(USER)
    relay = await relay_processes(write_config(tmp_path, api), TELEGRAM_BOT_TOKEN=TOKEN)
    asked = api.say(USER, "text hello from **run**\nsleep 0.2\ntext  done")
    await until(lambda: answers(api), "the answer", timeout=HANG_GUARD_S)
    assert api.calls("sendMessageDraft")
    assert answers(api)[0].startswith("hello from run done")
    api.edit(USER, asked["message_id"], "text hello again")  # the process asked Telegram for edits
    said = edit_wording.edit_not_sent_text("text hello again")
    await until(lambda: said in [m["text"] for m in api.bot_messages(USER)], "the edit's notice", timeout=HANG_GUARD_S)
    api.say(USER, "text on and on\nhang")  # then the person presses the draft's Stop button
    await until(lambda: USER in api.drafts, "the second answer's draft", timeout=HANG_GUARD_S)
    api.stop_draft(USER)
    await until(lambda: len(answers(api)) == 2, "the stopped answer", timeout=HANG_GUARD_S)
    assert answers(api)[1].startswith("on and on") and "Stopped." in answers(api)[1]
    assert await relay.stop() == 0
    stderr = relay.stderr
    assert "stopped cleanly" in stderr and TOKEN not in stderr and "Traceback" not in stderr
    last = api.calls("getUpdates")[-1]
    assert last.params.get("timeout") == 0 and not api.pending_updates, "the last update was confirmed on the way out"


def _returned(call: Call, text: str) -> bool:
    return call.method == "getUpdates" and any(text in str(u.get("message", {}).get("text")) for u in call.result or [])


def _confirms(call: Call, text: str) -> bool:
    return call.method == "getUpdates" and call.params.get("offset") is not None


#: (when the hook runs: as the call arrives, or once it is answered; which call)
MOMENTS: dict[str, tuple[str, Callable[[Call, str], bool]]] = {
    # Telegram hands the update over; the relay is killed before it reads it.
    "getUpdates returned it": ("answered", _returned),
    # The relay has it (journaled) and the agent has said nothing for a moment: typing (an answer whose
    # first words come at once needs none), perhaps before the offset past it is stored.
    "its first typing action": ("arrives", lambda call, text: call.method == "sendChatAction"),
    # The next poll confirms it (the offset past it is stored).
    "the poll that confirms it": ("arrives", _confirms),
    # Mid-answer: the draft is on screen, no message yet.
    "its first draft": ("arrives", lambda call, text: call.method == "sendMessageDraft"),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
async def test_kill_9_at_any_moment_loses_nothing_and_answers_once(api: FakeBotApi, relay_processes: Spawn,
                                                                  tmp_path: Path, moment: str) -> None:
    api.private(USER)
    config = write_config(tmp_path, api)
    first = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN)
    await until(lambda: api.calls("getUpdates"), "relay 1 polls", timeout=HANG_GUARD_S)
    text = "sleep 1.5\ntext the answer\nsleep 0.5\ntext  survives"  # the agent thinks first: typing is shown
    killed = asyncio.Event()

    when, matches = MOMENTS[moment]

    def hook(call: Call) -> None:
        if not killed.is_set() and matches(call, text):
            first.kill()
            killed.set()

    hooks = api.on_request if when == "arrives" else api.on_call
    hooks.append(hook)
    api.say(USER, text)
    async with asyncio.timeout(HANG_GUARD_S):
        await killed.wait()
    assert await first.exited() == -signal.SIGKILL
    hooks.remove(hook)
    assert not answers(api), "relay 1 was killed before it could answer"
    second = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN)
    await until(lambda: answers(api), "relay 2 answers", timeout=HANG_GUARD_S)
    await until(lambda: not api.pending_updates, "everything is confirmed", timeout=HANG_GUARD_S)
    await asyncio.sleep(1.5)  # a duplicate would be on its way by now: a poll cycle and a turn
    assert await second.stop() == 0
    assert len(answers(api)) == 1, api.transcript(USER)
    assert answers(api)[0].startswith("the answer survives")
    assert text in prompts(tmp_path)


async def test_an_invalid_token_is_one_sentence_and_exit_2(api: FakeBotApi, relay_processes: Spawn,
                                                           tmp_path: Path) -> None:
    wrong = "7000000001:AAHthisTokenIsNotTheOneTelegramKnows00"
    relay = await relay_processes(write_config(tmp_path, api), TELEGRAM_BOT_TOKEN=wrong)
    assert await relay.exited() == 2
    stderr = relay.stderr
    assert ("acp-relay: telegram: Telegram refused the bot token in TELEGRAM_BOT_TOKEN; copy it again from "
            "@BotFather (surfaces.telegram.token_env)\n") in stderr
    assert wrong not in stderr and "Traceback" not in stderr
    assert [c.method for c in api.events] == ["getMe"], "asked once, never again"


async def test_doctor_checks_the_token_with_getme_and_prints_the_username(api: FakeBotApi, relay_processes: Spawn,
                                                                          tmp_path: Path) -> None:
    config = write_config(tmp_path, api)
    relay = await relay_processes(config, "doctor", TELEGRAM_BOT_TOKEN=TOKEN)
    assert await relay.exited() == 0
    out = relay.stdout
    assert "surface telegram: $TELEGRAM_BOT_TOKEN present; getMe: @relay_bot" in out
    assert TOKEN not in out
    wrong = "7000000001:AAHthisTokenIsNotTheOneTelegramKnows00"
    bad = await relay_processes(config, "doctor", TELEGRAM_BOT_TOKEN=wrong)
    assert await bad.exited() == 1
    assert "Telegram refused it" in bad.stdout


async def test_check_config_refuses_webhook_mode_without_its_url_and_secret(api: FakeBotApi, relay_processes: Spawn,
                                                                            tmp_path: Path) -> None:
    relay = await relay_processes(write_config(tmp_path, api, mode="webhook"), "check-config",
                                  TELEGRAM_BOT_TOKEN=TOKEN)
    assert await relay.exited() == 2
    stderr = relay.stderr
    assert "surfaces.telegram.webhook_url: webhook mode needs the public HTTPS address" in stderr
    assert "surfaces.telegram.webhook_secret_env: webhook mode needs a secret in the environment variable " \
           "TELEGRAM_WEBHOOK_SECRET" in stderr


def _frames(tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "record.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


async def test_kill_9_while_the_next_session_is_opened_after_new(api: FakeBotApi, relay_processes: Spawn,
                                                                 tmp_path: Path) -> None:
    """``/new`` opens the next session at once; the relay killed while the agent is still making it (it
    takes 0.8 s here) starts again with the new conversation, which its next message gets."""
    api.private(USER)
    config = write_config(tmp_path, api)
    settings = json.loads(config.read_text())
    settings["agents"]["fake"]["args"] += ["--new-delay", "0.8"]
    config.write_text(json.dumps(settings))
    first = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN)
    api.say(USER, "text hello")
    await until(lambda: answers(api), "the first answer", timeout=HANG_GUARD_S)
    api.say(USER, "/new")
    await until(lambda: [f.get("method") for f in _frames(tmp_path)].count("session/new") == 2,
                "the agent is making the next session", timeout=HANG_GUARD_S)
    first.kill()
    assert await first.exited() == -signal.SIGKILL

    second = await relay_processes(config, TELEGRAM_BOT_TOKEN=TOKEN)
    api.say(USER, "text after the restart")
    await until(lambda: len(answers(api)) == 2, "the answer after the restart", timeout=HANG_GUARD_S)
    await asyncio.sleep(1.0)  # a duplicate would be on its way by now
    assert await second.stop() == 0
    said = [m["text"] for m in api.bot_messages(USER)]
    assert len(answers(api)) == 2 and answers(api)[1].startswith("after the restart"), api.transcript(USER)
    assert [t for t in said if t.startswith("Started a new conversation")] == [said[1]], api.transcript(USER)
    sessions = [f["params"]["sessionId"] for f in _frames(tmp_path) if f.get("method") == "session/prompt"]
    assert len(sessions) == 2 and sessions[0] != sessions[1], "the restarted relay kept the reset"
