"""The relay's garbage collector settings (``core/collector.py``)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from core.collector import OLDER_AFTER, YOUNG_AFTER, tune_collector


def test_the_relay_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    try:
        tune_collector()
        assert gc.get_threshold() == (YOUNG_AFTER, OLDER_AFTER, before[2])
        assert before[0] < YOUNG_AFTER and before[1] < OLDER_AFTER
    finally:
        gc.set_threshold(*before)


def test_run_tunes_the_collector_before_it_starts(tmp_path: Path) -> None:
    # ``acp-relay run`` sets it before its event loop starts; here the run (stood in for by a
    # coroutine printing what it sees) gets the defaults config, as a home without one gives.
    script = (
        "import asyncio, gc, sys\n"
        "import core.app\n"
        "async def fake_run(config):\n"
        "    print(gc.get_threshold()[:2])\n"
        "    return 0\n"
        "core.app.run_relay = fake_run\n"
        "from core.cli import main\n"
        "sys.exit(main(['run']))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env,
                          cwd=Path(__file__).resolve().parent.parent)
    assert f"({YOUNG_AFTER}, {OLDER_AFTER})" in done.stdout, done.stdout + done.stderr
