"""``make chaos``: 100 messages over 5 conversations, 10 kill -9s and a 429 storm, per surface and seed.

    python -m tests.chaos [--surfaces telegram,discord,slack] [--seeds 1,2,3] [--messages 100] [--kills 10]

Prints, per run, how many messages were answered once, lost and duplicated (and where each lost one
got lost), and, apart, any with a copy from Telegram's kill window (``Outcome.unheard``: the README's
one window); exits 1 unless every run lost nothing and duplicated nothing. Each run's store, config
and logs stay in .cache/chaos/<surface>-<seed>/ until the next run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

from tests.chaos.harness import Outcome, chaos
from tests.chaos.platforms import platform


async def run(surface: str, seed: int, messages: int, kills: int) -> Outcome:
    tmp = Path(".cache") / "chaos" / f"{surface}-{seed}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    async with platform(surface) as fake:
        return await chaos(fake, tmp.resolve(), seed=seed, messages=messages, kills=kills,
                           progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surfaces", default="telegram,discord,slack")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--kills", type=int, default=10)
    args = parser.parse_args()
    clean = True
    for surface in args.surfaces.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            outcome = asyncio.run(run(surface, seed, args.messages, args.kills))
            print(outcome.line(), flush=True)
            for line in outcome.details():
                print(line, flush=True)
            clean = clean and not outcome.lost and not outcome.duplicated and outcome.exit_code == 0
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
