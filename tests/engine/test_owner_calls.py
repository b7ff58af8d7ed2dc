"""Calls carried out by a conversation's owner for another relay (``OwnerCalls``), on both backends: two
stores on one database stand for two relays, each listening as its ownership's listener does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from core.engine import wording
from core.engine.owner_calls import CALL, DONE, STORED, CallFailed, OwnerCalls, OwnerSilent
from core.store import Notifier, Store
from tests.store.conftest import BACKENDS, Place, place_for

KEY = "dashboard:tab-1"


@pytest.fixture(params=BACKENDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    return place_for(request, tmp_path)


@asynccontextmanager
async def listening(store: Store, calls: OwnerCalls) -> AsyncIterator[None]:
    """``calls`` hears its notes, each handled in a task of its own (as ``Ownership`` does)."""
    async with Notifier(store).listen(CALL, DONE) as notes:
        handling: set[asyncio.Task[None]] = set()

        async def hear() -> None:
            async for note in notes:
                task = asyncio.create_task(calls.on_note(note))
                handling.add(task)
                task.add_done_callback(handling.discard)

        hearing = asyncio.create_task(hear())
        try:
            yield
        finally:
            hearing.cancel()
            await asyncio.gather(hearing, *handling, return_exceptions=True)


async def test_the_owner_carries_out_a_call_and_a_long_answer_comes_through_the_store(place: Place) -> None:
    with place.open() as a_store, place.open() as b_store:
        asker = OwnerCalls(a_store, "relay-a", owns=lambda key: False)
        owner = OwnerCalls(b_store, "relay-b", owns=lambda key: key == KEY)
        models = [f"provider-{i}/a-model-with-a-long-name-{i}" for i in range(400)]  # over 8000 bytes

        async def listed(key: str, args: dict[str, Any]) -> dict[str, Any]:
            return {"key": key, "models": models[:args["count"]]}

        async def refused(key: str, args: dict[str, Any]) -> dict[str, Any]:
            return {"error": "That model is not offered."}

        async def broken(key: str, args: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError("a bug on the owner")

        owner.handlers.update({"models": listed, "refused": refused, "broken": broken})
        async with listening(a_store, asker), listening(b_store, owner):
            assert await asker.call("models", KEY, {"count": 2}, wait_s=10) == {"key": KEY, "models": models[:2]}
            assert await asker.call("models", KEY, {"count": 400}, wait_s=10) == {"key": KEY, "models": models}
            assert a_store.offsets(STORED) == {}  # read, and gone
            with pytest.raises(CallFailed, match="not offered"):
                await asker.call("refused", KEY, {}, wait_s=10)
            with pytest.raises(CallFailed) as failed:
                await asker.call("broken", KEY, {}, wait_s=10)
            assert str(failed.value) == wording.OWNER_FAILED  # no exception text crosses to the asker


async def test_a_call_nobody_owning_the_conversation_takes_is_answered_by_silence(place: Place) -> None:
    with place.open() as a_store, place.open() as b_store:
        asker = OwnerCalls(a_store, "relay-a", owns=lambda key: False)
        former = OwnerCalls(b_store, "relay-b", owns=lambda key: False)  # its lease was taken over
        ran: list[str] = []

        async def stop(key: str, args: dict[str, Any]) -> dict[str, Any]:
            ran.append(key)
            return {}

        former.handlers["stop"] = stop
        async with listening(a_store, asker), listening(b_store, former):
            with pytest.raises(OwnerSilent):
                await asker.call("stop", KEY, {}, wait_s=0.5)
            with pytest.raises(OwnerSilent):
                await asker.call("not-a-kind", KEY, {}, wait_s=0.5)  # another version's call
        assert ran == []
