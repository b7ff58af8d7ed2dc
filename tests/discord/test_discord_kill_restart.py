"""``acp-relay run`` killed with SIGKILL while an answer is on Discord, then started again: the answer
is finished in the messages the person sees, never posted again below a cut-off copy. The fake's
``on_request`` hook kills the relay as a call arrives, before the relay has its answer (the fake
still carries the call out)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

from tests.discord.harness import ALICE, prompts, until
from tests.discord.test_discord_process import PROCESS_GUARD_S, run_relay, stop
from tests.fakes.discord_api import FakeDiscord

LONG = "chunks 500\nsleep 1\ntext  the end"  # about 2,700 characters: two messages of 2,000

Moment = Callable[[str, str], bool]  # (method, path) of a call as it arrives -> kill now?


async def killed_at(fake: FakeDiscord, tmp: Path, dm: int, moment: Moment) -> list[str]:
    """Relay 1 answers ``LONG`` in ``dm`` and is killed at ``moment``; returns the bot's message ids."""
    first = await run_relay(tmp, fake)
    killed = asyncio.Event()

    def hook(method: str, path: str, body: dict[str, object]) -> None:
        if not killed.is_set() and moment(method, path):
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
    await asyncio.sleep(0.2)  # the fake carries out the call the dead relay made
    assert not any("⏱" in m["content"] for m in fake.bot_messages(dm)), "killed before the answer was done"
    return [m["id"] for m in fake.bot_messages(dm)]


async def restarted(fake: FakeDiscord, tmp: Path, dm: int) -> None:
    """Relay 2 starts on the same store and finishes the answer; then it stops cleanly."""
    second = await run_relay(tmp, fake)
    try:
        await until(lambda: any("⏱" in m["content"] for m in fake.bot_messages(dm)), "relay 2 finishes the answer",
                    timeout=PROCESS_GUARD_S)
        await asyncio.sleep(1.0)  # a second copy would be on its way by now
    finally:
        code, err = await stop(second)
    assert code == 0, err


def answered_once(fake: FakeDiscord, dm: int) -> bool:
    whole = "\n".join(m["content"] for m in fake.bot_messages(dm))
    return whole.count("w0 ") == 1 and whole.count("w499") == 1 and "the end" in whole


async def test_killed_mid_answer_the_restarted_relay_finishes_it_in_the_same_messages(
        tmp_path: Path, fake_discord: FakeDiscord) -> None:
    fake, dm = fake_discord, fake_discord.dm(ALICE)
    before = await killed_at(fake, tmp_path, dm, lambda method, path: method == "PATCH"
                             and len(fake.bot_messages(dm)) >= 2)
    assert len(before) == 2
    assert [label for label, _ in fake.buttons(fake.bot_messages(dm)[-1])] == ["Stop"]  # killed mid-answer
    await restarted(fake, tmp_path, dm)
    assert [m["id"] for m in fake.bot_messages(dm)] == before, fake.transcript()
    assert answered_once(fake, dm)
    assert prompts(tmp_path / "record.jsonl") == [LONG, LONG]
    assert all(fake.buttons(m) == [] for m in fake.bot_messages(dm)), "no Stop left from the killed relay"


async def test_killed_as_discord_takes_a_new_piece_the_restart_does_not_post_it_twice(
        tmp_path: Path, fake_discord: FakeDiscord) -> None:
    fake, dm = fake_discord, fake_discord.dm(ALICE)
    # The second piece's POST: Discord makes the message, the relay never hears back about it.
    before = await killed_at(fake, tmp_path, dm, lambda method, path: method == "POST"
                             and path.endswith("/messages") and bool(fake.bot_messages(dm)))
    assert len(before) == 2, "the second piece was posted, and the relay never learnt its id"
    await restarted(fake, tmp_path, dm)
    assert [m["id"] for m in fake.bot_messages(dm)] == before, fake.transcript()
    assert answered_once(fake, dm)
