"""``first_done``: what a prompt turn waits on (its answer, or its turn's signals), as ``asyncio.wait``."""

from __future__ import annotations

import asyncio

import pytest

from core.acp.turn_state import first_done


async def test_the_first_future_done_is_in_the_set_and_the_others_are_not() -> None:
    loop = asyncio.get_running_loop()
    futures = (loop.create_future(), loop.create_future(), loop.create_future())
    loop.call_soon(futures[1].set_result, "answer")
    assert await first_done(futures, 60.0) == {futures[1]}
    futures[0].set_exception(RuntimeError("late"))  # a late one is no concern of the wait that ended
    assert futures[0].exception() is not None


async def test_a_future_done_before_the_wait_ends_it_at_once_with_every_other_done() -> None:
    loop = asyncio.get_running_loop()
    futures = (loop.create_future(), loop.create_future(), loop.create_future())
    futures[0].set_result(None)
    futures[2].set_exception(RuntimeError("failed"))
    assert await first_done(futures, 60.0) == {futures[0], futures[2]}
    futures[2].exception()


async def test_nothing_done_within_the_budget_is_an_empty_set() -> None:
    loop = asyncio.get_running_loop()
    futures = (loop.create_future(), loop.create_future())
    assert await first_done(futures, 0.01) == set()
    assert not any(f.done() for f in futures)


@pytest.mark.parametrize("which", [0, 1, None])
async def test_it_ends_as_asyncio_wait_ends(which: int | None) -> None:
    loop = asyncio.get_running_loop()

    async def both() -> tuple[set[int], set[int]]:
        ours = (loop.create_future(), loop.create_future())
        theirs = (loop.create_future(), loop.create_future())
        if which is not None:
            loop.call_soon(ours[which].set_result, None)
            loop.call_soon(theirs[which].set_result, None)
        done_ours = await first_done(ours, 0.05)
        done_theirs, _ = await asyncio.wait(theirs, timeout=0.05, return_when=asyncio.FIRST_COMPLETED)
        return {ours.index(f) for f in done_ours}, {theirs.index(f) for f in done_theirs}

    mine, asyncio_s = await both()
    assert mine == asyncio_s


async def test_a_cancelled_wait_leaves_the_futures_as_they_were() -> None:
    loop = asyncio.get_running_loop()
    futures = (loop.create_future(), loop.create_future())
    waiting = asyncio.create_task(first_done(futures, 60.0))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not any(f.done() or f.cancelled() for f in futures)
    futures[0].set_result(None)  # nothing of the cancelled wait runs any more
    await asyncio.sleep(0)
