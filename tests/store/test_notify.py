"""Notifications on both backends: sent when the writing transaction commits, never when it rolls
back, heard by a listener on another connection (another relay, on PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from core.store import Note, Notifier, StoreError
from tests.store.conftest import Place


async def next_note(notes: AsyncIterator[Note], within_s: float = 10.0) -> Note:
    return await asyncio.wait_for(anext(notes), within_s)


async def nothing_within(notes: AsyncIterator[Note], seconds: float) -> bool:
    try:
        await asyncio.wait_for(anext(notes), seconds)
    except TimeoutError:
        return True
    return False


async def test_another_relay_hears_a_notification_sent_after_a_write(place: Place) -> None:
    with place.open() as writer, place.open() as owner:
        async with Notifier(owner).listen("inbound", "other") as notes:
            writer.record_inbound("telegram", "1", "telegram:1", {})
            Notifier(writer).notify("inbound", "telegram:1")
            Notifier(writer).notify("elsewhere", "not ours")
            Notifier(writer).notify("other", "")
            assert await next_note(notes) == Note("inbound", "telegram:1")
            assert await next_note(notes) == Note("other", "")


async def test_a_notification_leaves_with_its_transactions_commit_and_never_after_a_rollback(place: Place) -> None:
    with place.open() as writer, place.open() as owner:
        async with Notifier(owner).listen("inbound") as notes:
            with pytest.raises(RuntimeError), writer.transaction():
                writer.record_inbound("telegram", "1", "telegram:1", {})
                Notifier(writer).notify("inbound", "rolled back")
                raise RuntimeError("the write failed after all")
            with writer.transaction():
                writer.record_inbound("telegram", "2", "telegram:1", {})
                Notifier(writer).notify("inbound", "telegram:1")
                assert await nothing_within(notes, 0.3)  # not before the commit
            note = await next_note(notes)
            assert note.payload == "telegram:1"
            assert [r.message_id for r in owner.unfinished_inbound()] == ["2"]  # the row is there when it is heard
            assert await nothing_within(notes, 0.3)  # and the rolled-back one never comes


async def test_a_fenced_transaction_sends_its_notification_only_while_the_lease_holds(place: Place) -> None:
    with place.open() as a, place.open() as b:
        lease = a.leases.acquire("conversation:c", "relay-a", 30)
        assert lease is not None
        async with Notifier(b).listen("inbound") as notes:
            fenced = a.fenced(lease)
            with fenced.transaction():
                Notifier(a).notify("inbound", "c")
            assert (await next_note(notes)).payload == "c"
            b.backend.execute("UPDATE leases SET expires_at = {now} - 1 WHERE name = 'conversation:c'")
            assert b.leases.acquire("conversation:c", "relay-b", 30) is not None
            with pytest.raises(StoreError), fenced.transaction():
                Notifier(a).notify("inbound", "from the old owner")
            assert await nothing_within(notes, 0.3)


def test_a_channel_must_be_an_identifier_and_a_payload_short(place: Place) -> None:
    with place.open() as store:
        notifier = Notifier(store)
        for channel in ("", "Inbound", "in bound", "x" * 64, "in;NOTIFY"):
            with pytest.raises(ValueError, match="channel"):
                notifier.notify(channel, "p")
        with pytest.raises(ValueError, match="8000 bytes"):
            notifier.notify("inbound", "é" * 4000)
        notifier.notify("inbound", "x" * 7999)


async def test_a_wait_given_up_leaves_the_listener_usable(place: Place) -> None:
    with place.open() as writer, place.open() as owner:
        async with Notifier(owner).listen("inbound") as notes:
            for _ in range(3):
                assert await nothing_within(notes, 0.05)
            Notifier(writer).notify("inbound", "still heard")
            assert (await next_note(notes)).payload == "still heard"


async def test_a_lost_listening_connection_is_a_transient_store_error(place: Place) -> None:
    if place.kind != "postgresql":
        pytest.skip("a SQLite store's listeners are in the process: no connection to lose")
    with place.open() as owner:
        async with Notifier(owner).listen("inbound") as notes:
            place.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'")
            with pytest.raises(StoreError) as lost:
                await next_note(notes)
            assert lost.value.transient
            with pytest.raises(StoreError):  # and stays so: listen again
                await next_note(notes)
