"""``acp-relay run`` killed with SIGKILL while an answer streams in a Slack thread, then started again.

Killed mid-stream: the stream the new process cannot continue is stopped with the line saying the
full answer follows, and the answer is then written into that same message. Killed while the
working status is cleared after the final answer: the message is not sent to the agent again.
Killed again after the restart began the answer's second message: the third process finds both.
Killed as Slack takes a new stream or message (the relay never heard its ts): the restart finds it
in the thread (``conversations.replies``) and writes the answer into it, not below it; a Slack that
will not let the thread be read gets the answer posted again (the old behaviour), never lost.
The fake's ``on_request`` hook kills the relay as a call arrives, before the relay has its answer.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.engine import wording
from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.slack_api import BOT_USER, TEAM, SlackFake

from .conftest import CHANNEL, USER, until
from .test_run import HANG_GUARD_S, acp_relay

LONG = "chunks 600\nsleep 1\ntext  the end"


def write_config(tmp: Path, fake: SlackFake) -> Path:
    (tmp / "work").mkdir(exist_ok=True)
    args = [str(FAKE_AGENT_PATH), "--record", str(tmp / "record.jsonl"), "--state-dir", str(tmp / "agent-state")]
    config = {
        "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(tmp / "work")}},
        "store": {"path": str(tmp / "relay.db")},
        "engine": {"edit_interval_s": 0.05},
        "surfaces": {"dashboard": {"enabled": False},
                     "slack": {"enabled": True, "api_base_url": fake.api_url, "allowed_user_ids": [USER]}},
    }
    path = tmp / "config.json"
    path.write_text(json.dumps(config))
    return path


def prompts(tmp: Path) -> list[str]:
    path = tmp / "record.jsonl"
    frames = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    return ["\n".join(b.get("text", "") for b in f["params"]["prompt"]) for f in frames
            if f.get("method") == "session/prompt"]


async def killed_at(fake: SlackFake, tmp: Path, text: str, when: Callable[[str, dict[str, Any]], bool]) -> str:
    """Relay 1 answers a mention and is killed at ``when``; returns the thread's ts."""
    return await _run_until_killed(fake, tmp, when, text)


async def restarted_and_killed_at(fake: SlackFake, tmp: Path, when: Callable[[str, dict[str, Any]], bool]) -> None:
    """The next relay takes up where the last one was killed, and is killed at ``when`` in turn."""
    await _run_until_killed(fake, tmp, when)


async def _run_until_killed(fake: SlackFake, tmp: Path, when: Callable[[str, dict[str, Any]], bool],
                            text: str | None = None) -> str:
    """``acp-relay run``, killed at ``when`` (after being asked ``text``, when given); the asking message's ts."""
    proc = await acp_relay(tmp, "run", "--config", str(write_config(tmp, fake)))
    killed = asyncio.Event()

    def hook(method: str, params: dict[str, Any]) -> None:
        if not killed.is_set() and when(method, params):
            proc.send_signal(signal.SIGKILL)
            killed.set()

    fake.on_request.append(hook)
    asked_ts = ""
    try:
        if text is not None:
            asked_ts = await mention(fake, text)
        async with asyncio.timeout(HANG_GUARD_S):
            await killed.wait()
            assert await proc.wait() == -signal.SIGKILL
    finally:
        fake.on_request.remove(hook)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return asked_ts


async def mention(fake: SlackFake, text: str) -> str:
    """Once the relay is connected, the person mentions it with ``text``; returns the message's ts."""
    await fake.wait_connected(timeout=HANG_GUARD_S)
    asked = fake.user_message(USER, CHANNEL, f"<@{BOT_USER}> {text}")
    await fake.push(fake.event_envelope({"type": "app_mention", "user": USER, "text": asked.text,
                                         "ts": asked.ts, "channel": CHANNEL, "team": TEAM}))
    return asked.ts


async def restarted_until(fake: SlackFake, tmp: Path, done: Callable[[], object]) -> str:
    """A relay runs until ``done``, then is stopped; returns what it logged."""
    proc = await acp_relay(tmp, "run", "--config", str(write_config(tmp, fake)))
    try:
        await fake.wait_connected(count=fake.connections + 1, timeout=HANG_GUARD_S)
        await until(done, timeout=HANG_GUARD_S, what="relay 2 finishes the answer")
        await asyncio.sleep(1.0)  # a second copy would be on its way by now
    finally:
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(HANG_GUARD_S):
            _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return err.decode()


async def test_a_stream_cut_by_a_kill_is_stopped_with_a_line_and_the_answer_finished_in_it(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        appends = 0

        def second_append(method: str, params: dict[str, Any]) -> bool:
            nonlocal appends
            appends += method == "chat.appendStream"
            return appends >= 2

        thread = await killed_at(fake, tmp_path, LONG, second_append)
        [cut] = fake.bot_messages(CHANNEL, thread)
        assert cut.stream == "streaming" and "w0 " in cut.shown

        await restarted_until(fake, tmp_path, lambda: "⏱" in fake.bot_messages(CHANNEL, thread)[-1].shown)
        shown = fake.bot_messages(CHANNEL, thread)
        assert [m.ts for m in shown] == [cut.ts], fake.transcript(CHANNEL, thread)
        assert shown[0].stream == "stopped" and shown[0].shown.count("w0 ") == 1
        assert wording.INTERRUPTED_RESUMING not in shown[0].shown, "the line gave way to the whole answer"
        stopped = [p for m, p in fake.calls if m == "chat.stopStream" and p.get("ts") == cut.ts]
        assert wording.INTERRUPTED_RESUMING in str(stopped[0].get("markdown_text"))
        assert prompts(tmp_path) == [LONG, LONG]


async def test_killed_while_the_status_is_cleared_after_the_answer_it_is_not_answered_again(
        tmp_path: Path) -> None:
    async with SlackFake() as fake:
        text = "sleep 1.5\ntext the one answer"  # the agent thinks first: the status is set, then cleared
        stopped: list[bool] = []

        def clearing(method: str, params: dict[str, Any]) -> bool:
            stopped.append(method == "chat.stopStream")
            return any(stopped) and method == "assistant.threads.setStatus" and not params.get("status")

        thread = await killed_at(fake, tmp_path, text, clearing)
        assert "⏱" in fake.bot_messages(CHANNEL, thread)[-1].shown, "the answer was shown before the kill"
        await restarted_until(fake, tmp_path, lambda: True)
        assert prompts(tmp_path) == [text], "the agent was not asked again"
        assert [m.shown.split("\n\n")[0] for m in fake.bot_messages(CHANNEL, thread)] == ["the one answer"]


async def test_killed_again_after_a_restart_began_a_second_message_both_are_taken_up_again(
        tmp_path: Path) -> None:
    """Relay 2 takes up the cut stream (its first record of the reply) and begins the answer's second
    message (a later record, one statement); killed then, relay 3 finds both and finishes the answer
    in them: nothing is posted again."""
    async with SlackFake() as fake:
        text = "text opening words\nsleep 1\nchunks 3000\nsleep 1\ntext  the end"  # two Slack messages
        thread = await killed_at(fake, tmp_path, text, lambda method, params: method == "chat.appendStream")
        [cut] = fake.bot_messages(CHANNEL, thread)

        def second_message(method: str, params: dict[str, Any]) -> bool:
            return method in ("chat.appendStream", "chat.stopStream", "chat.update") and params.get("ts") not in (
                None, cut.ts)

        await restarted_and_killed_at(fake, tmp_path, second_message)
        first, second = fake.bot_messages(CHANNEL, thread)
        assert first.ts == cut.ts

        # Relay 3's own last word, not the thread's: relay 2 may have been killed at its final edit
        # (the fake applies the call it was killed at), whose footer shows before relay 3 begins.
        begun = len(fake.calls)
        await restarted_until(fake, tmp_path, lambda: any(
            "⏱" in str(params) for method, params in fake.calls[begun:]
            if method in ("chat.update", "chat.stopStream")))
        shown = fake.bot_messages(CHANNEL, thread)
        assert [m.ts for m in shown] == [cut.ts, second.ts], fake.transcript(CHANNEL, thread)
        whole = "".join(m.shown for m in shown)
        assert whole.count("opening words") == 1 and whole.count("w2999 ") == 1 and "the end" in whole
        assert wording.INTERRUPTED_RESUMING not in whole, "the lines gave way to the whole answer"
        assert prompts(tmp_path) == [text, text, text]


def answered(fake: SlackFake, thread: str) -> Callable[[], bool]:
    return lambda: (shown := fake.bot_messages(CHANNEL, thread)) and "⏱" in shown[-1].shown


def starts_a_new(method: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda called, params: called == method and bool(params.get("thread_ts"))


async def test_killed_as_slack_takes_a_new_stream_the_answer_is_not_shown_twice(tmp_path: Path) -> None:
    """What the chaos run hits when a kill lands while the relay has not yet read chat.startStream's
    answer (the stream's ts): the stream is on Slack, the journal has no record of it. The restart
    reads the thread, stops that stream and writes the answer into its message."""
    async with SlackFake() as fake:
        thread = await killed_at(fake, tmp_path, LONG, starts_a_new("chat.startStream"))
        [orphan] = fake.bot_messages(CHANNEL, thread)  # the stream Slack started

        await restarted_until(fake, tmp_path, answered(fake, thread))
        shown = fake.bot_messages(CHANNEL, thread)
        assert [m.ts for m in shown] == [orphan.ts], fake.transcript(CHANNEL, thread)
        assert shown[0].stream == "stopped" and shown[0].shown.count("w0 ") == 1 and "the end" in shown[0].shown
        assert wording.INTERRUPTED_RESUMING not in shown[0].shown
        assert prompts(tmp_path) == [LONG, LONG]


async def test_killed_as_slack_takes_a_new_message_the_answer_is_written_into_it(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        fake.streaming = False  # sent and edited: the first piece is a chat.postMessage
        thread = await killed_at(fake, tmp_path, LONG, starts_a_new("chat.postMessage"))
        [orphan] = fake.bot_messages(CHANNEL, thread)

        await restarted_until(fake, tmp_path, answered(fake, thread))
        shown = fake.bot_messages(CHANNEL, thread)
        assert [m.ts for m in shown] == [orphan.ts], fake.transcript(CHANNEL, thread)
        assert shown[0].shown.count("w0 ") == 1 and "the end" in shown[0].shown
        asked = [p for m, p in fake.calls if m == "conversations.replies"]
        assert len(asked) == 1 and asked[0]["ts"] == thread and float(asked[0]["oldest"]) < float(orphan.ts)


async def test_a_slack_that_will_not_let_the_thread_be_read_gets_the_answer_posted_again(tmp_path: Path) -> None:
    """missing_scope (an app installed before the history scopes): the old behaviour, the answer
    below the cut-off stream, logged once; nothing is lost."""
    async with SlackFake() as fake:
        fake.history_scope = False
        thread = await killed_at(fake, tmp_path, LONG, starts_a_new("chat.startStream"))
        [orphan] = fake.bot_messages(CHANNEL, thread)

        logged = await restarted_until(fake, tmp_path, answered(fake, thread))
        shown = fake.bot_messages(CHANNEL, thread)
        assert shown[0].ts == orphan.ts and len(shown) == 2, fake.transcript(CHANNEL, thread)
        assert "the end" in shown[-1].shown and shown[-1].shown.count("w0 ") == 1
        assert [m for m, _ in fake.calls].count("conversations.replies") == 1
        assert logged.count("missing_scope") == 1, logged


async def test_an_answer_nobody_killed_costs_no_read_of_the_thread(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        proc = await acp_relay(tmp_path, "run", "--config", str(write_config(tmp_path, fake)))
        try:
            thread = await mention(fake, LONG)
            await until(answered(fake, thread), timeout=HANG_GUARD_S, what="the answer")
        finally:
            proc.send_signal(signal.SIGTERM)
            async with asyncio.timeout(HANG_GUARD_S):
                await proc.communicate()
        assert len(fake.bot_messages(CHANNEL, thread)) == 1
        assert "conversations.replies" not in [m for m, _ in fake.calls]
