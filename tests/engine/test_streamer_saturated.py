"""A reply already showing while the relay is saturated, on virtual time (delays recorded, never waited).

In a burst the relay's own timers fire late (its event loop has more ready work than it can run).
An update of an answer that already shows its first words is then a nicety that queues ahead of
other conversations' first words: the flusher waits on, in steps, until its timer fires on time
again, at most ``SATURATED_HOLD_S``. Its own first words never wait, nor does the final state.
"""

from __future__ import annotations

from itertools import pairwise

from fakes.memory_surface import FakeClock, MemorySurface

from core.engine.saturation import CATCH_UP_STEP_S, LATE_S
from core.engine.streamer import SATURATED_HOLD_S, Streamer
from core.engine.surface import Capabilities, Rendered

KEY = "memory:1"
INTERVAL_S = 0.2  # the dashboard's


class TimedSurface(MemorySurface):
    """Notes the virtual time of every message sent or edited."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(capabilities=Capabilities(max_message_length=4096, edit_interval_s=INTERVAL_S))
        self.clock = clock
        self.at: list[tuple[float, str]] = []

    async def send(self, conversation_key: str, message: Rendered, **kwargs: object) -> str:
        self.at.append((self.clock.now, "send"))
        return await super().send(conversation_key, message, **kwargs)  # type: ignore[arg-type]

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, **kwargs: object) -> None:
        self.at.append((self.clock.now, "edit"))
        await super().edit(conversation_key, message_id, message, **kwargs)  # type: ignore[arg-type]


async def answer(*, saturated: tuple[float, float], words_every_s: float = 0.05, lasts_s: float = 4.0,
                 first_words_at_s: float = 0.5, nothing_until_s: float = 0.0) -> tuple[TimedSurface, list[str]]:
    """An answer whose first words come at ``first_words_at_s``, then a word every ``words_every_s`` until
    ``lasts_s``; from ``saturated[0]`` to ``saturated[1]`` every timer of the flusher fires late. With
    ``nothing_until_s``, the answer is first updated with nothing to show, that long before its words."""
    clock = FakeClock()
    surface = TimedSurface(clock)
    start, end = saturated

    async def sleep(delay: float) -> None:
        await clock.sleep(delay + (10 * LATE_S if start <= clock.now < end else 0.0))

    async def scenario() -> list[str]:
        streamer = Streamer(surface, KEY, interval_s=INTERVAL_S, sleep=sleep, clock=clock.monotonic)
        text = "first words"
        async with streamer:
            if nothing_until_s:
                await clock.sleep(first_words_at_s - nothing_until_s)
                streamer.update("")
                await clock.sleep(nothing_until_s)
            else:
                await clock.sleep(first_words_at_s)
            streamer.update(text)
            while clock.now < lasts_s:
                await clock.sleep(words_every_s)
                text += " and"
                streamer.update(text)
            return await streamer.finish(text + " done.")

    ids = await clock.run(scenario())
    return surface, ids


def edits(surface: TimedSurface) -> list[float]:
    return [at for at, kind in surface.at if kind == "edit"]


async def test_on_time_a_growing_answer_is_edited_once_an_interval() -> None:
    surface, ids = await answer(saturated=(0.0, 0.0))
    assert surface.at[0] == (0.5, "send")
    made = edits(surface)
    assert len(made) >= 15  # 3.5 s of words at an edit every 0.2 s (and the final one)
    assert all(b - a <= INTERVAL_S + 1e-9 for a, b in pairwise(made))
    assert surface.messages[ids[-1]].text.endswith("done.")


async def test_while_saturated_first_words_go_at_once_and_edits_wait_until_the_loop_catches_up() -> None:
    surface, ids = await answer(saturated=(0.0, 1.5))
    assert surface.at[0] == (0.5, "send")  # the first words never wait
    made = edits(surface)
    assert made and made[0] >= 1.5  # no edit while the loop was saturated
    # A late step begun just before 1.5 s, then one step that came back on time: edited after it.
    assert made[0] <= 1.5 + 2 * CATCH_UP_STEP_S + 10 * LATE_S
    assert len(made) >= 10  # once it caught up, edited once an interval again
    assert surface.messages[ids[-1]].text.endswith("done.")


async def test_an_answer_that_showed_nothing_yet_is_not_held_before_its_first_words_while_saturated() -> None:
    surface, ids = await answer(saturated=(0.0, 60.0), first_words_at_s=0.5, nothing_until_s=0.3)
    # Its flush of nothing came at 0.2 s; the words came after that flush's one interval, not a hold.
    assert surface.at[0][1] == "send"
    assert surface.at[0][0] <= 0.2 + INTERVAL_S + 10 * LATE_S + 1e-9
    assert surface.messages[ids[-1]].text.endswith("done.")


async def test_a_relay_saturated_for_long_still_edits_an_answer_every_hold() -> None:
    surface, ids = await answer(saturated=(0.0, 60.0), lasts_s=8.0)
    made = edits(surface)[:-1]  # the last one is the final state
    assert len(made) >= 3  # not held for the whole answer
    assert all(b - a >= SATURATED_HOLD_S for a, b in pairwise(made))
    assert all(b - a <= SATURATED_HOLD_S + INTERVAL_S + 10 * LATE_S for a, b in pairwise(made))
    assert surface.messages[ids[-1]].text.endswith("done.")


async def test_the_final_state_of_an_answer_is_delivered_at_once_even_while_saturated() -> None:
    surface, ids = await answer(saturated=(0.0, 60.0), lasts_s=1.0)
    assert surface.at[-1][1] == "edit"
    assert 1.0 <= surface.at[-1][0] < 1.0 + 0.06  # as the answer ended, not after a hold
    assert surface.messages[ids[-1]].text.endswith("done.")
