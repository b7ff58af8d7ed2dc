"""Chaos runs: ``acp-relay run`` per surface against its fake, killed with SIGKILL at seeded random
moments while people write in several conversations, with a stretch where 30% of sends and edits
get 429 (see ``harness``).

The short runs (default suite, about half a minute each) hold the core's promise: a message the
relay journaled is answered exactly once, never twice and never dropped, across kills. The full runs
(``make chaos``: 100 messages over 5 conversations, 10 kills) hold the whole promise: nothing lost,
nothing duplicated, whatever the surface did with a message while the relay was being killed.

Both accept the one copy the README says a person may see: on Telegram, a message Telegram made in
the milliseconds before a kill, which the relay never stored and no later call names (it takes no
idempotency key for a new message). The outcome counts it apart (``Outcome.unheard``); any other copy
is a duplicate (``tests/chaos/test_unheard.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.harness import Outcome, chaos
from tests.chaos.platforms import platform

SURFACES = ["telegram", "discord", "slack"]


def report(outcome: Outcome) -> str:
    return "\n".join([outcome.line(), *outcome.details()])


@pytest.mark.parametrize("surface", SURFACES)
async def test_kills_at_random_moments_never_show_an_answer_twice_nor_drop_a_journaled_message(
        surface: str, tmp_path: Path) -> None:
    async with platform(surface) as fake:
        outcome = await chaos(fake, tmp_path, seed=19, messages=12, conversations=3, kills=3, storm=(1, 2),
                              settle_s=20.0)
    print(report(outcome))
    assert outcome.exit_code == 0, report(outcome)
    assert not outcome.duplicated, report(outcome)
    journaled_but_lost = {n: why for n, why in outcome.lost.items() if why.startswith("journaled")}
    assert not journaled_but_lost, report(outcome)


@pytest.mark.chaos
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("surface", SURFACES)
async def test_100_messages_10_kills_and_a_429_storm_lose_nothing_and_duplicate_nothing(
        surface: str, seed: int, tmp_path: Path) -> None:
    async with platform(surface) as fake:
        outcome = await chaos(fake, tmp_path, seed=seed)
    print(report(outcome))
    assert outcome.exit_code == 0, report(outcome)
    assert not outcome.lost and not outcome.duplicated, report(outcome)
