"""The relay's garbage collector settings (``core/collector.py``)."""

from __future__ import annotations

import gc

from core.collector import YOUNG_AFTER, settle, tune_collector


def test_the_relay_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    try:
        tune_collector()
        assert gc.get_threshold() == (YOUNG_AFTER, *before[1:])
        assert before[0] < YOUNG_AFTER
    finally:
        gc.set_threshold(*before)



def test_settle_keeps_what_the_process_holds_out_of_later_collections() -> None:
    held: list[object] = [object()]  # a container alive before and after
    gc.unfreeze()
    try:
        assert any(obj is held for obj in gc.get_objects())
        settle()
        assert gc.get_freeze_count() > 0
        assert not any(obj is held for obj in gc.get_objects())  # frozen: no collection walks it
        made_after: list[object] = []
        assert any(obj is made_after for obj in gc.get_objects())  # what comes later is collected as ever
    finally:
        gc.unfreeze()
