"""The retry ladder: transient failures retried with backoff and jitter, never after side effects.

Whether a failure is transient is the one verdict of ``core.describing.describe`` (keyed off the same
``_RE_*`` patterns as the wording a person reads). On top of it the ladder has
two limits of its own: a retry is allowed only while the turn has produced no text and run no
tool, so it can never repeat a side effect; and a prompt timeout is not retried here, because that
attempt already spent the whole prompt budget (the person is told to try again instead).
Terminal failures (and refusals, which are not failures) skip the ladder. An attempt that failed
before its prompt reached the agent gives its attempt back.

``budget_s`` bounds the whole ladder, attempts included: a retry starts only while the time since
the first attempt began is under the budget, and its wait is cut to what is left, so the ladder ends
within the budget plus one attempt (and the event loop's timer lateness, a millisecond or so).
Agents that retry a failed model call themselves (Copilot CLI five times, gemini-cli about ten,
opencode and Qwen Code for minutes) are not retried again: a backend known to
(``AGENTS_THAT_RETRY``), or an attempt that failed only after half the budget, which is the agent
retrying where we cannot see it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from core.describing import describe
from core.errors import AcpTimeoutError
from core.failures import AGENTS_THAT_RETRY

__all__ = ["AGENTS_THAT_RETRY", "Attempt", "RetryPolicy", "with_retries"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` in all (the first included); the ladder, attempts and waits, ends within
    ``budget_s`` seconds plus at most one attempt."""

    attempts: int = 3
    budget_s: float = 15.0
    base_delay_s: float = 5.0

    def delay(self, retry_index: int, rng: random.Random) -> float:
        """Exponential backoff from ``base_delay_s`` with +-25% jitter; when the waits would add up
        to more than ``budget_s`` they are scaled down to fit it."""
        raw = [self.base_delay_s * 2.0**i for i in range(max(self.attempts - 1, 1))]
        scale = min(1.0, self.budget_s / sum(raw)) if sum(raw) else 1.0
        base = raw[min(retry_index, len(raw) - 1)] * scale
        return float(base * rng.uniform(0.75, 1.25))

    @property
    def slow_attempt_s(self) -> float:
        """An attempt failing after this long was the agent retrying by itself: not retried again."""
        return self.budget_s / 2


@dataclass(slots=True)
class Attempt:
    """Handed to each attempt; the attempt sets ``reached_agent`` just before sending the prompt
    and ``side_effects`` once text streamed or a tool ran."""

    number: int
    reached_agent: bool = False
    side_effects: bool = False


def _may_retry(exc: BaseException, attempt: Attempt) -> bool:
    """The shared verdict says transient, and the ladder's own limits allow another try."""
    if attempt.side_effects or isinstance(exc, AcpTimeoutError):
        return False
    return describe(exc).transient


def _agent_retried(attempt: Attempt, took_s: float, policy: RetryPolicy,
                   agent_retries: Callable[[], bool] | None) -> bool:
    """The agent already retried this failure itself (only a prompt that reached it can have)."""
    if not attempt.reached_agent:
        return False
    return took_s >= policy.slow_attempt_s or (agent_retries is not None and agent_retries())


async def with_retries(
    run: Callable[[Attempt], Awaitable[T]], *, policy: RetryPolicy,
    on_retry: Callable[[Attempt, float, BaseException], Awaitable[None]] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, rng: random.Random | None = None,
    agent_retries: Callable[[], bool] | None = None, clock: Callable[[], float] = time.monotonic,
) -> T:
    """Run ``run`` until it succeeds, fails terminally, has side effects, or the ladder is spent.

    ``agent_retries`` says, after a failure, whether this agent retries failed model calls by
    itself (its backend is known by then); ``clock`` measures the attempts and the ladder.
    """
    counted = 0
    given_back = 0
    ladder_started = clock()  # the budget bounds the time since: attempts and waits alike
    while True:
        attempt = Attempt(number=counted + 1)
        started = clock()
        try:
            return await run(attempt)
        except Exception as exc:
            took = clock() - started
            spent = clock() - ladder_started
            if not _may_retry(exc, attempt) or _agent_retried(attempt, took, policy, agent_retries):
                raise
            if spent >= policy.budget_s:
                raise
            if attempt.reached_agent or given_back >= policy.attempts:
                counted += 1
            else:
                given_back += 1  # never reached the agent: the attempt is given back (bounded)
            if counted >= policy.attempts:
                raise
            rng = rng or random.Random()  # seeded from the OS: made for a retry, not for every turn
            delay = min(policy.delay(counted + given_back - 1, rng), policy.budget_s - spent)
            if on_retry is not None:  # told which counted attempt comes next (never past the total)
                await on_retry(Attempt(number=counted + 1), delay, exc)
            await sleep(delay)
