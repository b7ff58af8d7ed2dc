"""The per-chat pace and the receive-loop supervisor, on a virtual clock (no waiting, no timing)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from fakes.memory_surface import FakeClock

from core.engine.pacing import Pacer
from core.engine.receiving import Receiver
from core.engine.surface import RateLimit, StartupError

GROUP = RateLimit(20, 60.0)  # Telegram's group pace: one call every 3 s on average


def test_calls_into_one_chat_are_spaced_and_other_chats_are_not_held_back() -> None:
    clock = FakeClock()
    pacer = Pacer(sleep=clock.sleep, clock=clock.monotonic)
    waits = [pacer.reserve("chat-a", GROUP) for _ in range(3)]
    assert waits == [0.0, 3.0, 6.0], "each call takes the next free slot of its chat"
    assert pacer.reserve("chat-b", GROUP) == 0.0, "another chat has its own pace"
    assert pacer.reserve("chat-c", None) == 0.0 and pacer.reserve("chat-c", None) == 0.0, "unpaced chat"


def test_after_a_quiet_moment_a_burst_goes_at_once_and_then_the_average_pace_holds() -> None:
    clock = FakeClock()
    pacer = Pacer(sleep=clock.sleep, clock=clock.monotonic)
    discord = RateLimit(5, 5.0, burst=5)
    assert [pacer.reserve("channel", discord) for _ in range(7)] == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0]
    clock.now = 60.0  # a quiet minute later the chat can burst again
    assert [pacer.reserve("channel", discord) for _ in range(5)] == [0.0] * 5


def test_a_429_holds_the_whole_chat_for_retry_after() -> None:
    clock = FakeClock()
    pacer = Pacer(sleep=clock.sleep, clock=clock.monotonic)
    pacer.hold("chat-a", 7.0)
    assert pacer.reserve("chat-a", None) == 7.0, "an unpaced chat is held too"
    assert pacer.reserve("chat-a", GROUP) == 7.0, "the next caller waits for the same end of the hold"
    assert pacer.reserve("chat-b", GROUP) == 0.0


async def test_concurrent_callers_never_share_a_slot() -> None:
    clock = FakeClock()
    pacer = Pacer(sleep=clock.sleep, clock=clock.monotonic)
    went: list[float] = []

    async def call() -> None:
        await pacer.wait("chat-a", RateLimit(1, 1.0))
        went.append(clock.now)

    await clock.run(asyncio.gather(*(call() for _ in range(4))))
    assert sorted(went) == [0.0, 1.0, 2.0, 3.0]


def test_idle_chats_are_forgotten_so_the_pacer_does_not_grow() -> None:
    clock = FakeClock()
    pacer = Pacer(sleep=clock.sleep, clock=clock.monotonic)
    for i in range(2000):
        pacer.reserve(f"chat-{i}", GROUP)
        clock.now += 1.0
    assert len(pacer) < 1100


class CountingClock(FakeClock):
    """A virtual clock whose instants count how often they are compared: the pacer's work per call,
    measured without timing anything."""

    compared = 0

    def monotonic(self) -> float:
        return _Instant(self.now)


class _Instant(float):
    def __sub__(self, other: float) -> _Instant:  # the cutoff ``now - window`` is an instant too
        return _Instant(float(self) - other)

    def __gt__(self, other: object) -> bool:  # ``stored < cutoff`` lands here (reflected)
        CountingClock.compared += 1
        return float(self) > other  # type: ignore[operator]

    def __lt__(self, other: object) -> bool:
        CountingClock.compared += 1
        return float(self) < other  # type: ignore[operator]

    def __le__(self, other: object) -> bool:
        CountingClock.compared += 1
        return float(self) <= other  # type: ignore[operator]

    def __ge__(self, other: object) -> bool:
        CountingClock.compared += 1
        return float(self) >= other  # type: ignore[operator]


def test_a_call_does_not_walk_every_chat_the_pacer_knows() -> None:
    # Issue 24: past 1,024 chats every call looked at every chat to forget the idle ones.
    clock = CountingClock()
    pacer = Pacer(sleep=clock.sleep, clock=clock.monotonic)

    def compared_per_call(chats: int) -> float:
        for i in range(chats):  # every chat active within the last minute: none may be forgotten
            pacer.reserve(f"chat-{i}", GROUP)
            clock.now += 60.0 / chats
        CountingClock.compared = 0
        for i in range(100):
            pacer.reserve(f"chat-{i}", GROUP)
        return CountingClock.compared / 100

    few = compared_per_call(200)
    many = compared_per_call(5000)
    assert many <= few + 2, f"{many:.0f} comparisons per call among 5,000 chats, {few:.0f} among 200"


async def test_a_receive_loop_that_ends_is_restarted_with_a_growing_capped_delay(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    ends = 0

    async def connect() -> None:
        nonlocal ends
        ends += 1
        if ends > 6:
            await asyncio.Event().wait()  # connected for good
        raise ConnectionResetError("gateway closed")

    receiver = Receiver("memory", connect, sleep=clock.sleep, clock=clock.monotonic, max_delay_s=8.0)
    receiver.start()
    await clock.advance(100.0)
    assert ends == 7 and receiver.reconnects == 6
    assert clock.sleeps == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0], "doubling, capped"
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 6 and all("memory stopped receiving (ConnectionResetError: gateway closed)" in line
                                   for line in lines), lines
    await receiver.stop()


async def test_a_configuration_fact_stops_the_receiver_and_is_reported_as_fatal() -> None:
    clock = FakeClock()
    tries = 0

    async def connect() -> None:
        nonlocal tries
        tries += 1
        raise StartupError("the token is invalid; check surfaces.memory.token_env")

    receiver = Receiver("memory", connect, sleep=clock.sleep, clock=clock.monotonic)
    receiver.start()
    fatal = await asyncio.wait_for(receiver.fatal(), 5)
    assert str(fatal) == "the token is invalid; check surfaces.memory.token_env"
    assert tries == 1, "no reconnect can fix a configuration fact"
    await receiver.stop()
