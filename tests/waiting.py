"""Waiting in tests without measuring time: poll a condition; shrink the relay's own sleeps.

Timeouts here are hang guards only, never assertions about how long something took.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["HANG_GUARD_S", "fast_sleep", "until"]

HANG_GUARD_S = 20.0  # only ever reached when something hangs


async def until(pred: Callable[[], object], what: str = "", timeout: float = HANG_GUARD_S) -> None:
    """Poll ``pred`` until it is true; fail (naming ``what``) if that never happens."""
    try:
        async with asyncio.timeout(timeout):
            while not pred():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"condition never became true: {what or pred}") from None


async def fast_sleep(delay: float) -> None:
    """An injectable sleep: back-off and redelivery delays shrink to a few ms."""
    await asyncio.sleep(min(delay, 0.02))
