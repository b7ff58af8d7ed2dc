"""The "still retrying" line: what it says while an agent retries a failed model call by itself."""

from __future__ import annotations

from core.engine import wording
from core.engine.patience import SILENT_AFTER_S, Patience


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_agent_that_says_it_retries_is_shown_at_once_then_with_the_time_so_far() -> None:
    clock = Clock()
    patience = Patience(silent_retrier=lambda: False, clock=clock)
    assert patience.tick() is None, "nothing said, nothing to say"
    first = patience.retrying()
    assert first == wording.agent_retrying(0) and "rate limit or overload" in first
    clock.now += 130
    line = patience.tick()
    assert line is not None and "still retrying, 2 minutes so far" in line
    assert patience.answered() == "", "the answer came: the line goes"
    assert patience.tick() is None and patience.gave_up() is None


def test_an_agent_known_to_retry_in_silence_is_presumed_retrying_after_a_minute() -> None:
    clock = Clock()
    silent = [True]
    patience = Patience(silent_retrier=lambda: silent[0], clock=clock)
    clock.now += SILENT_AFTER_S - 1
    assert patience.tick() is None
    clock.now += 2
    line = patience.tick()
    assert line is not None and "may be retrying" in line and "1 minute so far" in line
    assert patience.gave_up() == wording.AGENT_RETRY_GAVE_UP


def test_other_agents_get_no_line_however_long_the_silence() -> None:
    clock = Clock()
    patience = Patience(silent_retrier=lambda: False, clock=clock)
    clock.now += 10 * SILENT_AFTER_S
    assert patience.tick() is None
    assert patience.gave_up() is None and patience.answered() is None
