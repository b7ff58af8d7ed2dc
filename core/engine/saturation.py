"""Telling that the relay itself is the slow part, and waiting on while it is.

A timer of the relay's that fires late means its event loop has more ready work than it can run: a
burst of conversations. Work that is a nicety then (a typing indicator, one more edit of an answer
already showing) waits on in short steps until the loop catches up, so that it does not queue ahead
of other conversations' first words; never past a cap, so a relay that stays saturated still does it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

__all__ = ["CATCH_UP_STEP_S", "LATE_S", "wait_out"]

#: A timer of the relay's that fires this much later than asked means its event loop is saturated.
LATE_S = 0.02
#: While it is, waiting goes on in steps this long (each step checks the loop again).
CATCH_UP_STEP_S = 0.25


async def wait_out(sleep: Callable[[float], Awaitable[None]], clock: Callable[[], float], first_s: float,
                   cap_s: float, done: Callable[[], bool] | None = None) -> float:
    """Sleep ``first_s``; while that sleep (or the last step) came back ``LATE_S`` late or more, sleep on
    in steps of ``CATCH_UP_STEP_S`` until one is on time, ``done()`` is true, or ``cap_s`` passed in all.
    ``clock`` is the one ``sleep`` runs on. Returns the time waited."""
    start = clock()
    step = first_s
    while True:
        asked = clock()
        await sleep(step)
        now = clock()
        waited = now - start
        late = now - asked - step
        if late <= LATE_S or waited >= cap_s or (done is not None and done()):
            return waited
        step = min(CATCH_UP_STEP_S, cap_s - waited)
