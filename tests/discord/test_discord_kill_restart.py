"""``acp-relay run`` killed with SIGKILL while an answer is being edited on Discord, then started
again: the answer is finished in the messages the person sees, not posted again below a cut-off copy.
The fake's ``on_request`` hook kills the relay as an edit arrives, before the relay has its answer."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from tests.discord.harness import ALICE, prompts, until
from tests.discord.test_discord_process import PROCESS_GUARD_S, run_relay, stop
from tests.fakes.discord_api import FakeDiscord

LONG = "chunks 500\nsleep 1\ntext  the end"  # about 2,700 characters: two messages of 2,000


async def test_killed_mid_answer_the_restarted_relay_finishes_it_in_the_same_messages(
        tmp_path: Path, fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    dm = fake.dm(ALICE)
    first = await run_relay(tmp_path, fake)
    killed = asyncio.Event()

    def hook(method: str, path: str, body: dict[str, object]) -> None:
        if not killed.is_set() and method == "PATCH" and len(fake.bot_messages(dm)) >= 2:
            first.send_signal(signal.SIGKILL)
            killed.set()

    fake.on_request.append(hook)
    try:
        await fake.connected(PROCESS_GUARD_S)
        await fake.say(dm, ALICE, LONG)
        async with asyncio.timeout(PROCESS_GUARD_S):
            await killed.wait()
            await first.wait()
    finally:
        fake.on_request.clear()
        if first.returncode is None:
            first.kill()
            await first.wait()
    before = [m["id"] for m in fake.bot_messages(dm)]
    assert len(before) == 2 and not any("⏱" in m["content"] for m in fake.bot_messages(dm))

    second = await run_relay(tmp_path, fake)
    try:
        await until(lambda: any("⏱" in m["content"] for m in fake.bot_messages(dm)), "relay 2 finishes the answer",
                    timeout=PROCESS_GUARD_S)
        await asyncio.sleep(1.0)  # a second copy would be on its way by now
    finally:
        code, err = await stop(second)
    assert code == 0, err
    shown = fake.bot_messages(dm)
    assert [m["id"] for m in shown] == before, fake.transcript()
    whole = "\n".join(m["content"] for m in shown)
    assert whole.count("w0 ") == 1 and whole.count("w499") == 1 and "the end" in whole
    assert prompts(tmp_path / "record.jsonl") == [LONG, LONG]


async def test_killed_as_discord_takes_a_new_piece_the_restart_does_not_post_it_twice(
        tmp_path: Path, fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    dm = fake.dm(ALICE)
    first = await run_relay(tmp_path, fake)
    killed = asyncio.Event()

    def hook(method: str, path: str, body: dict[str, object]) -> None:
        # The second piece's POST: Discord makes the message, the relay never hears back about it.
        if not killed.is_set() and method == "POST" and path.endswith("/messages") and fake.bot_messages(dm):
            first.send_signal(signal.SIGKILL)
            killed.set()

    fake.on_request.append(hook)
    try:
        await fake.connected(PROCESS_GUARD_S)
        await fake.say(dm, ALICE, LONG)
        async with asyncio.timeout(PROCESS_GUARD_S):
            await killed.wait()
            await first.wait()
    finally:
        fake.on_request.clear()
        if first.returncode is None:
            first.kill()
            await first.wait()
    await asyncio.sleep(0.2)  # the fake makes the message the dead relay asked for
    before = [m["id"] for m in fake.bot_messages(dm)]
    assert len(before) == 2, "the second piece was posted, and the relay never learnt its id"

    second = await run_relay(tmp_path, fake)
    try:
        await until(lambda: any("⏱" in m["content"] for m in fake.bot_messages(dm)), "relay 2 finishes the answer",
                    timeout=PROCESS_GUARD_S)
        await asyncio.sleep(1.0)
    finally:
        code, err = await stop(second)
    assert code == 0, err
    shown = fake.bot_messages(dm)
    assert [m["id"] for m in shown] == before, fake.transcript()
    whole = "\n".join(m["content"] for m in shown)
    assert whole.count("w0 ") == 1 and whole.count("w499") == 1 and "the end" in whole
