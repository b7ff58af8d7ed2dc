"""The typing indicator and the answer's first words, on virtual time (delays recorded, never waited).

A platform's indicator that lapses by itself is cleared by the bot's next message: an answer whose
first words show within ``TYPING_AFTER_S`` needs no indicator before them (nor a call clearing it),
so in a burst its first words are not queued behind a call nobody would see. A silent agent gets
the indicator as before, refreshed while the turn runs and cleared at the end. While the relay's
own loop is saturated (its timers fire late: a burst), the first indicator waits until the loop
catches up, the answer shows, or its first refresh is due.
"""

from __future__ import annotations

from fakes.memory_surface import FakeClock, MemorySurface

from core.engine.indicator import TYPING_AFTER_S, TypingIndicator
from core.engine.saturation import LATE_S
from core.engine.streamer import Streamer
from core.engine.surface import Capabilities

KEY = "memory:1"
REFRESH_S = 4.0  # Telegram's


def typing_calls(surface: MemorySurface) -> list[tuple[float, str]]:
    return [(float(c[3]), c[2]) for c in surface.calls if c[0] == "typing"]


class TimedSurface(MemorySurface):
    """Notes the virtual time of each typing call beside it."""

    clock: FakeClock

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        self.calls.append(("typing", conversation_key, str(active), str(self.clock.now)))
        self.typing_active[conversation_key] = active


async def turn(first_words_after_s: float, lasts_s: float, *, refresh_s: float | None = REFRESH_S,
               saturated_until_s: float = 0.0) -> TimedSurface:
    """A turn whose first words come after ``first_words_after_s`` and that ends after ``lasts_s``;
    until ``saturated_until_s`` the indicator's timers fire late (the relay's loop is saturated)."""
    clock = FakeClock()
    surface = TimedSurface(capabilities=Capabilities(max_message_length=4096, typing_refresh_s=refresh_s))
    surface.clock = clock

    async def late_sleep(delay: float) -> None:
        await clock.sleep(delay + (10 * LATE_S if clock.now < saturated_until_s else 0.0))

    async def scenario() -> None:
        streamer = Streamer(surface, KEY, interval_s=1.0, sleep=clock.sleep, clock=clock.monotonic)
        typing = TypingIndicator(surface, KEY, sleep=late_sleep, clock=clock.monotonic,
                                 answered=lambda: streamer.shown)
        async with streamer, typing:
            await clock.sleep(first_words_after_s)
            streamer.update("first words")
            await clock.sleep(lasts_s - first_words_after_s)
            await typing.pause()
            await streamer.finish("first words, and the rest")

    await clock.run(scenario())
    return surface


async def test_an_answer_that_shows_at_once_is_not_preceded_by_an_indicator_nor_cleared() -> None:
    surface = await turn(0.2, 2.0)
    assert typing_calls(surface) == []  # its first words clear a platform's indicator: none is sent
    assert [c[0] for c in surface.calls] == ["send", "edit"]


async def test_a_long_turn_whose_answer_shows_at_once_gets_its_indicator_at_the_first_refresh() -> None:
    surface = await turn(0.2, 10.0)
    assert typing_calls(surface) == [(REFRESH_S, "True"), (2 * REFRESH_S, "True"), (10.0, "False")]


async def test_a_silent_agent_gets_the_indicator_after_a_moment_refreshed_and_cleared() -> None:
    surface = await turn(6.0, 7.0)
    assert typing_calls(surface) == [(TYPING_AFTER_S, "True"), (TYPING_AFTER_S + REFRESH_S, "True"), (7.0, "False")]


async def test_an_indicator_that_does_not_lapse_is_shown_at_once() -> None:
    surface = await turn(0.2, 2.0, refresh_s=None)  # the dashboard's: shown until cleared
    assert typing_calls(surface) == [(0.0, "True"), (2.0, "False")]


async def test_while_the_relay_is_saturated_an_answer_that_shows_then_is_not_preceded_by_an_indicator() -> None:
    surface = await turn(2.5, 3.5, saturated_until_s=3.0)  # a burst: its first words come late
    assert typing_calls(surface) == []
    assert [c[0] for c in surface.calls] == ["send", "edit"]


async def test_a_silent_agent_gets_the_indicator_once_the_relay_caught_up() -> None:
    surface = await turn(6.0, 7.0, saturated_until_s=2.0)
    calls = typing_calls(surface)
    assert [active for _, active in calls] == ["True", "True", "False"]
    assert 2.0 <= calls[0][0] < REFRESH_S  # not while saturated; refreshed from then on
    assert calls[1][0] == calls[0][0] + REFRESH_S


async def test_a_relay_saturated_for_long_shows_the_indicator_by_its_first_refresh() -> None:
    surface = await turn(6.0, 7.0, saturated_until_s=60.0)
    calls = typing_calls(surface)
    assert [active for _, active in calls] == ["True", "False"]
    assert TYPING_AFTER_S < calls[0][0] <= REFRESH_S + 10 * LATE_S  # the cap (its timer late too)


async def test_an_answer_delivered_before_the_first_indicator_does_not_wait_for_it() -> None:
    """Pausing an indicator still waiting to show its first sends nothing and returns at once (a
    turn in a burst does not wait a round of the loop for it); one shown is still waited for."""
    clock = FakeClock()
    surface = TimedSurface(capabilities=Capabilities(max_message_length=4096, typing_refresh_s=REFRESH_S))
    surface.clock = clock
    typing = TypingIndicator(surface, KEY, sleep=clock.sleep, clock=clock.monotonic, answered=lambda: True)
    await typing.__aenter__()
    await FakeClock.settle()  # its task waits for the first refresh
    pausing = typing.pause()
    try:
        pausing.send(None)
    except StopIteration:
        pass
    else:
        raise AssertionError("pause() waited although no indicator was on its way")
    await typing.__aexit__(None, None, None)
    await FakeClock.settle()
    assert typing_calls(surface) == []
