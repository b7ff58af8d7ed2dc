"""The retry ladder against a slow-failing agent: how long a failing turn takes in all, attempts plus
waits, beside ``retry.budget_s``.

The scripted fake agent fails every prompt with a 503 after ``sleep`` seconds (an agent retrying a
model call by itself, in miniature). The real ladder (``core.retry.with_retries``, real sleeps,
jitter) drives ``AcpSession.prompt`` on a real ``AcpRuntime``. The promise: a failing turn ends
within the budget plus one attempt; an attempt that takes half the budget or more is not retried.
The default configuration (3 attempts, 15 s, waits of about 5 s and 10 s) is measured with its time
scaled by ``--scale`` (0.1: a 1.5 s budget), so the bench takes seconds.

    python -m bench.bench_ladder [--scale 0.1] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from core.acp.client import AcpError
from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.retry import Attempt, RetryPolicy, with_retries

__all__ = ["ladder_run", "main"]

FAKE_AGENT = Path(__file__).resolve().parent.parent / "tests" / "fakes" / "acp_agent.py"
FAILED = json.dumps({"message": "Internal error", "data": "503 Service Unavailable"})
#: The default policy's numbers (config: retry.attempts, budget_s, base_delay_s).
DEFAULT = RetryPolicy(attempts=3, budget_s=15.0, base_delay_s=5.0)
#: An asyncio timer fires a little late (a millisecond or so): the last wait may end that far past the budget.
TIMER_SLACK_S = 0.01


async def ladder_run(runtime: AcpRuntime, policy: RetryPolicy, attempt_s: float,
                     seed: int) -> tuple[float, int, float]:
    """One failing turn on the ladder: seconds from the first prompt to the final failure, prompts
    sent, and the longest attempt as measured (the agent's sleep plus the round trip)."""
    session = await runtime.new_session()
    script = f"sleep {attempt_s}\nerror_data -32603 {FAILED}"
    took: list[float] = []

    async def attempt(state: Attempt) -> None:
        state.reached_agent = True
        begun = time.monotonic()
        try:
            await session.prompt(script, timeout_s=60)
        finally:
            took.append(time.monotonic() - begun)

    started = time.monotonic()
    try:
        await with_retries(attempt, policy=policy, rng=random.Random(seed))
    except AcpError:
        pass
    return time.monotonic() - started, len(took), max(took)


async def _main(scale: float, runs: int) -> int:
    policy = RetryPolicy(DEFAULT.attempts, DEFAULT.budget_s * scale, DEFAULT.base_delay_s * scale)
    budget = policy.budget_s
    print(f"retry ladder vs a slow-failing agent (default policy x{scale:g}: {policy.attempts} attempts, "
          f"budget {budget:g}s, base wait {policy.base_delay_s:g}s; {runs} runs each)")
    print(f"{'attempt':>8} {'prompts':>8} {'worst total':>12} {'budget':>7} {'budget+1 attempt':>17}  within"
          "   (attempt: the agent's time to fail; budget+1 attempt: with the longest attempt as measured, "
          f"plus {TIMER_SLACK_S * 1000:g} ms of timer lateness)")
    ok = True
    with tempfile.TemporaryDirectory() as cwd:
        spec = AgentSpec(name="fake", command=sys.executable, args=(str(FAKE_AGENT),), cwd=cwd, tool_gate="allow")
        async with await AcpRuntime.start(spec) as runtime:
            for fraction in (0.02, 0.2, 0.4, 0.6, 1.2):  # of the budget; from half the budget on: not retried
                attempt_s = budget * fraction
                results = [await ladder_run(runtime, policy, attempt_s, seed) for seed in range(runs)]
                worst, prompts = max(r[0] for r in results), max(r[1] for r in results)
                # one attempt as measured, and the timer's lateness at the end of the last wait
                limit = budget + max(r[2] for r in results) + TIMER_SLACK_S
                within = worst <= limit
                ok = ok and within
                print(f"{attempt_s:7.2f}s {prompts:8d} {worst:11.2f}s {budget:6.2f}s {limit:16.2f}s  "
                      f"{'yes' if within else 'NO'}")
    print("worst case within budget plus one attempt:", "yes" if ok else "NO")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.1, help="the default policy's times times this")
    parser.add_argument("--runs", type=int, default=3, help="failing turns per attempt length (jitter)")
    args = parser.parse_args()
    return asyncio.run(_main(args.scale, args.runs))


if __name__ == "__main__":
    raise SystemExit(main())
