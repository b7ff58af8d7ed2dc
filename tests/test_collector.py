"""The relay's garbage collector settings (``core/collector.py``)."""

from __future__ import annotations

import gc

from core.collector import YOUNG_AFTER, tune_collector


def test_the_relay_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    try:
        tune_collector()
        assert gc.get_threshold() == (YOUNG_AFTER, *before[1:])
        assert before[0] < YOUNG_AFTER
    finally:
        gc.set_threshold(*before)

