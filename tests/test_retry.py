"""The retry ladder on its own: verdicts, the budget, side effects, and attempts given back."""

from __future__ import annotations

import random

import pytest

from core.acp.client import AcpAuthRequired, AcpError, AcpTimeoutError
from core.acp.session_handle import AcpRuntimeDead
from core.retry import Attempt, RetryPolicy, with_retries


class Script:
    """An attempt function that fails as scripted, recording what the ladder asked of it."""

    def __init__(self, *steps: tuple[BaseException | None, bool, bool]) -> None:
        self.steps = list(steps)  # (error or None for success, reached_agent, side_effects)
        self.calls: list[Attempt] = []
        self.slept: list[float] = []

    async def __call__(self, attempt: Attempt) -> str:
        self.calls.append(attempt)
        error, reached, side_effects = self.steps.pop(0)
        attempt.reached_agent, attempt.side_effects = reached, side_effects
        if error is not None:
            raise error
        return "answered"

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def transient() -> AcpError:
    return AcpError("Too Many Requests", transient=True, rpc_code=-32603)


POLICY = RetryPolicy(attempts=3, budget_s=15.0, base_delay_s=5.0)


async def run(script: Script, policy: RetryPolicy = POLICY) -> str:
    return await with_retries(script, policy=policy, sleep=script.sleep, rng=random.Random(7))


async def test_transient_then_success_answers_after_one_wait() -> None:
    script = Script((transient(), True, False), (None, True, False))
    assert await run(script) == "answered"
    assert len(script.calls) == 2 and len(script.slept) == 1


async def test_three_transient_failures_give_up_with_the_last_error_within_the_budget() -> None:
    errors = [transient() for _ in range(3)]
    script = Script(*[(e, True, False) for e in errors])
    with pytest.raises(AcpError) as raised:
        await run(script)
    assert raised.value is errors[-1]
    assert len(script.calls) == 3
    assert 3.75 <= script.slept[0] <= 6.25 and 7.5 <= script.slept[1] <= 12.5  # ~5 s then ~10 s
    assert sum(script.slept) <= 15.0 * 1.25


def test_waits_shrink_to_fit_a_smaller_budget() -> None:
    policy = RetryPolicy(attempts=3, budget_s=3.0, base_delay_s=5.0)
    rng = random.Random(1)
    waits = [policy.delay(i, rng) for i in range(2)]
    assert sum(waits) <= 3.0 * 1.25 and waits[0] < waits[1]


@pytest.mark.parametrize("error", [
    AcpError("Improperly formed request.", transient=False, rpc_code=-32603),
    AcpAuthRequired("not logged in", agent_line="error: You are not logged in"),
    AcpTimeoutError("no answer", partial_output="half"),  # the whole prompt budget is already spent
])
async def test_terminal_failures_skip_the_ladder(error: AcpError) -> None:
    script = Script((error, True, False))
    with pytest.raises(type(error)):
        await run(script)
    assert len(script.calls) == 1 and not script.slept


async def test_no_retry_once_the_attempt_had_side_effects() -> None:
    script = Script((transient(), True, True))
    with pytest.raises(AcpError):
        await run(script)
    assert len(script.calls) == 1


async def test_a_failure_before_the_prompt_reached_the_agent_gives_its_attempt_back() -> None:
    died = AcpRuntimeDead("agent exited", exit_code=1)
    script = Script((died, False, False), (transient(), True, False), (transient(), True, False),
                    (None, True, False))
    assert await run(script) == "answered"
    assert len(script.calls) == 4  # 3 counted attempts reached the agent; the first was given back


async def test_attempts_given_back_are_bounded() -> None:
    script = Script(*[(AcpRuntimeDead("agent exited"), False, False) for _ in range(20)])
    with pytest.raises(AcpRuntimeDead):
        await run(script)
    assert len(script.calls) <= 2 * POLICY.attempts


async def test_the_retry_notice_never_counts_past_the_total() -> None:
    numbers: list[int] = []

    async def on_retry(next_attempt: Attempt, delay: float, exc: BaseException) -> None:
        numbers.append(next_attempt.number)

    died = AcpRuntimeDead("agent exited")
    script = Script((transient(), True, False), (died, False, False), (died, False, False),
                    (transient(), True, False), (transient(), True, False))
    with pytest.raises(AcpError):
        await with_retries(script, policy=POLICY, on_retry=on_retry, sleep=script.sleep, rng=random.Random(3))
    assert numbers and max(numbers) <= POLICY.attempts
    assert numbers == sorted(numbers)


class SlowAgent:
    """Attempts that each fail after ``took`` seconds of a fake clock; waits advance it too."""

    def __init__(self, took: float) -> None:
        self.took, self.now, self.calls = took, 0.0, 0

    def clock(self) -> float:
        return self.now

    async def __call__(self, attempt: Attempt) -> str:
        self.calls += 1
        attempt.reached_agent = True
        self.now += self.took
        raise transient()

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize("took", [0.0, 1.0, 3.0, 5.0, 7.0])
async def test_the_budget_bounds_the_whole_ladder_attempts_included(took: float) -> None:
    agent = SlowAgent(took)
    policy = RetryPolicy(attempts=10, budget_s=15.0, base_delay_s=5.0)
    with pytest.raises(AcpError):
        await with_retries(agent, policy=policy, sleep=agent.sleep, rng=random.Random(1), clock=agent.clock)
    assert agent.now <= policy.budget_s + took, "at most one attempt past the budget"


async def test_an_attempt_that_failed_after_half_the_budget_is_not_retried() -> None:
    """The agent spent that time retrying by itself (gemini-cli: ten tries of a 503)."""
    agent = SlowAgent(8.0)
    with pytest.raises(AcpError):
        await with_retries(agent, policy=POLICY, sleep=agent.sleep, clock=agent.clock)
    assert agent.calls == 1


async def test_an_agent_known_to_retry_by_itself_is_not_retried_again() -> None:
    agent = SlowAgent(0.5)
    with pytest.raises(AcpError):
        await with_retries(agent, policy=POLICY, sleep=agent.sleep, clock=agent.clock, agent_retries=lambda: True)
    assert agent.calls == 1
    other = SlowAgent(0.5)
    with pytest.raises(AcpError):
        await with_retries(other, policy=POLICY, sleep=other.sleep, clock=other.clock, agent_retries=lambda: False)
    assert other.calls == POLICY.attempts


async def test_a_failure_before_the_prompt_reached_the_agent_is_retried_whatever_the_agent() -> None:
    script = Script((AcpRuntimeDead("agent exited"), False, False), (None, True, False))
    got = await with_retries(script, policy=POLICY, sleep=script.sleep, agent_retries=lambda: True)
    assert got == "answered" and len(script.calls) == 2
