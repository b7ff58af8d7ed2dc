"""One owner per conversation while several relays share a PostgreSQL store.

Whichever relay receives a message journals it. The conversation's owner holds the lease
``conversation:<key>`` and answers; a relay that receives a message for a conversation another relay
owns only journals it and wakes the owner (``NOTIFY inbound, <key>`` after the journal entry
committed). A conversation nobody owns goes to the relay that receives its next message, or, for a
message left unanswered (its owner died, or a wake-up was missed), to the first relay whose sweep
finds it once the lease has expired.

The owner renews its leases (the heartbeat, every third of the lease time, also while a long turn
runs). A lease taken over, or one that could not be renewed before its deadline (the database
unreachable), is lost: the relay stops that conversation's turn and queue at once and sends nothing
more in it (the new owner answers what is left, continuing in the messages an answer had begun).
Every write of the owner about the conversation is fenced by its token (``Store.fenced``), so a
relay that missed its deadline cannot complete, or record a reply to, a message twice; a late write
about a conversation this relay held and let go (lost, or released) is refused too. Every platform
call of the owner is checked against its lease's deadline first (``guard``): a relay whose event loop
stalled past it makes no call (another relay may own the conversation by then) and stops the
conversation as if the lease were lost.

The database lost mid-run: a relay journals nothing (the surfaces leave the platform's updates
unconfirmed, so they come again), a running turn goes on until its lease's deadline, and what the
owner could not write meanwhile is kept (``deferred``) and written, fenced by the lease it was made
under, on the first heartbeat the database answers, before the leases are renewed and before this
relay takes any conversation again. A restarted database server let every lease expire: for
``2 * ttl_s`` after it started, no relay takes over another's conversation, so the owners write
what they kept first (else a message answered during the outage would be answered again).

A SQLite store has one relay: the engine runs without ``Ownership`` there.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from core.engine.deferred import DeferredWrites
from core.store import Lease, LeaseLost, Note, Notifier, Store, StoreError

__all__ = ["CHANNEL", "LEASE_PREFIX", "Ownership", "default_relay_name"]

log = logging.getLogger("acp_relay.engine.ownership")

LEASE_PREFIX = "conversation:"
#: The channel a relay that journaled a message wakes the owner on; the payload is the conversation key.
CHANNEL = "inbound"
#: A listener that lost its connection tries again after this long.
_RELISTEN_S = 1.0
#: The conversations let go that a late write is still refused for (the oldest are forgotten first:
#: what could write late about one, its cancelled turn, is long gone by then).
_GONE_KEPT = 10_000


def default_relay_name() -> str:
    """``<host>:<pid>``: unique among relays running at once, and a restarted relay is a new owner."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Ownership:
    """This relay's leases; ``run`` keeps them (heartbeat), listens for wake-ups and sweeps for orphans.

    ``pickup(key)`` is the engine's: answer ``key``'s unfinished messages (called once a lease is
    held; it returns at once, the answering goes on in the engine's tasks); ``on_lost(key)`` stops
    the conversation at once; ``serves(key)`` says this relay runs the conversation's surface.
    """

    def __init__(self, store: Store, relay: str, ttl_s: float, *, pickup: Callable[[str], None],
                 on_lost: Callable[[str], None], serves: Callable[[str], bool],
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.store = store
        self.relay = relay
        self.ttl_s = ttl_s
        self.leases: dict[str, Lease] = {}
        #: The last lease of each conversation this relay held and let go (lost or released), until
        #: it takes it again: a late write about it is refused (``fenced``).
        self._gone: dict[str, Lease] = {}
        #: The owner's writes kept while the database does not answer (``core.engine.deferred``).
        self.deferred = DeferredWrites()
        self._notifier = Notifier(store)
        self._pickup = pickup
        self._on_lost = on_lost
        self._serves = serves
        self._sleep = sleep
        #: Other channels this relay listens on, and what handles their notes (each in a task of its own).
        self.handlers: dict[str, Callable[[Note], Coroutine[Any, Any, None]]] = {}
        self._handling: set[asyncio.Task[None]] = set()
        #: Called after each sweep (the engine resends the kept answers of what it owns now).
        self.on_beat: Callable[[], None] = lambda: None
        #: Called whenever the listener (re)starts: what was sent before it listened was not heard.
        self.on_listening: list[Callable[[], None]] = []
        #: Conversations whose pickup could not read the store: picked up again at the next heartbeat.
        self._pick_up_later: set[str] = set()

    def lease(self, key: str) -> Lease | None:
        """The lease this relay holds on ``key`` and may still act on, or None."""
        lease = self.leases.get(key)
        if lease is not None and lease.remaining_s() <= 0:
            self.lost(key, "its lease could not be renewed in time")
            return None
        return lease

    def take(self, key: str) -> bool:
        """Hold ``key`` (already held, or free/expired and taken now); False while another relay owns it."""
        if self.lease(key) is not None:
            return True
        if self.deferred.pending(key) and not self.deferred.flush(key):
            return False  # the database does not answer: nothing can be taken now
        lease = self.store.leases.acquire(LEASE_PREFIX + key, self.relay, self.ttl_s, restart_grace_s=2 * self.ttl_s)
        if lease is None:
            return False
        self.leases[key] = lease
        self._gone.pop(key, None)
        return True

    def answers(self, key: str) -> bool:
        """``take``, with a database that cannot be reached meaning no (nothing is done meanwhile)."""
        try:
            return self.take(key)
        except StoreError as exc:
            log.warning("could not tell who answers %s: %s", key, exc)
            return False

    def pick_up_later(self, key: str) -> None:
        """``pickup(key)`` could not read the store (the database away): it runs again at the next
        heartbeat, while ``key`` is still this relay's."""
        self._pick_up_later.add(key)

    def wake(self, key: str) -> None:
        """Wake the owner of ``key``: a message was journaled for it here."""
        self._notifier.notify(CHANNEL, key)

    def holder(self, key: str) -> str | None:
        """The relay that owns ``key`` now (by the database), or None."""
        found = self.store.leases.holder(LEASE_PREFIX + key)
        return found.owner if found is not None else None

    def release(self, key: str) -> None:
        """Let ``key`` go (evicted from memory, or the relay stops): the next message's relay takes it."""
        lease = self._drop(key)
        if lease is not None:
            self._let_go(lease)

    def _let_go(self, lease: Lease) -> None:
        try:
            self.store.leases.release(lease)
        except StoreError as exc:  # it expires by itself
            log.warning("could not release %s: %s", lease.name, exc)

    def release_all(self) -> None:
        """Let every lease go (a clean stop: the others take over without waiting for the expiry)."""
        for key in list(self.leases):
            self.release(key)

    def lost(self, key: str, why: str) -> None:
        """``key`` is no longer this relay's: stop it now."""
        if self._drop(key) is not None:
            log.warning("%s is no longer owned here (%s): another relay answers it", key, why)
            self._on_lost(key)

    def _drop(self, key: str) -> Lease | None:
        """Forget the lease on ``key`` (remembered as gone: late writes about it are refused)."""
        lease = self.leases.pop(key, None)
        if lease is not None:
            self._gone.pop(key, None)
            self._gone[key] = lease
            while len(self._gone) > _GONE_KEPT:
                del self._gone[next(iter(self._gone))]
        return lease

    def fenced(self, key: str) -> Store:
        """The store for writes about ``key``: fenced by its lease while held. ``LeaseLost`` for a
        conversation this relay held and let go (a late write: it may be another relay's now); plain
        for one never taken here (the writes before it is first taken)."""
        lease = self.leases.get(key)
        if lease is not None:
            return self.store.fenced(lease)
        gone = self._gone.get(key)
        if gone is not None:
            raise LeaseLost(self.store.path, gone, None, None,
                            why="this relay let it go, so a late write about it was refused")
        return self.store

    def guard(self, key: str) -> Callable[[], None] | None:
        """What checks each platform call about ``key`` while this relay owns it; None when it does
        not hold ``key`` now (the call is not an owner's: nothing to check).

        The check raises ``LeaseLost`` instead of the call when the lease is past its deadline (the
        relay's loop stalled and its heartbeat did not renew it in time: another relay may own the
        conversation by now), and stops the conversation here as a lost lease does (right after the
        caller has unwound); also when the lease it was made under is no longer held (the call comes
        late, from a turn being stopped)."""
        lease = self.leases.get(key)
        if lease is None:
            return None

        def check() -> None:
            held = self.leases.get(key)
            if held is None or held.token != lease.token:
                raise LeaseLost(self.store.path, lease, None, None,
                                why="this relay let it go, so it makes no call about it")
            if held.remaining_s() <= 0:
                # Stopped once the caller has unwound (it may be the conversation's own turn).
                asyncio.get_running_loop().call_soon(self.lost, key, "its deadline passed before it was renewed")
                raise LeaseLost(self.store.path, held, None, None,
                                why="its deadline passed before it was renewed, so it makes no call about it")

        return check

    async def exclusive(self, name: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` while this relay alone holds the lease ``name`` (a platform's poller, a
        gateway): the others stand by, trying every third of the lease time. A lease lost (taken
        over, or not renewed before its deadline) cancels ``work`` and this relay stands by again;
        returns when ``work`` returns, and a cancelled call cancels ``work``, with the lease released."""
        beat = self.ttl_s / 3
        while True:
            lease = self.store.leases.acquire(name, self.relay, self.ttl_s, restart_grace_s=2 * self.ttl_s)
            if lease is None:
                await self._sleep(beat)
                continue
            log.info("%s: this relay holds %s now", self.relay, name)
            task = asyncio.create_task(_run(work), name=f"exclusive:{name}")
            try:
                while lease is not None and not task.done():
                    await asyncio.wait({task}, timeout=beat)
                    if not task.done():
                        lease = self._renewed(lease)
                if task.done():
                    if lease is not None:
                        self.store.leases.release(lease)
                    task.result()  # its failure is the caller's (the receiver reconnects)
                    return
                log.warning("%s: this relay no longer holds %s; standing by", self.relay, name)
            except asyncio.CancelledError:  # the relay stops: the next one takes over without waiting
                task.cancel()
                await asyncio.wait({task})
                if lease is not None:
                    self._let_go(lease)
                raise
            finally:
                if not task.done():
                    task.cancel()
                    await asyncio.wait({task})

    def _renewed(self, lease: Lease) -> Lease | None:
        """``lease`` renewed; None when it is lost (or would be before the next try)."""
        try:
            return self.store.leases.renew(lease)
        except LeaseLost:
            return None
        except StoreError as exc:
            if lease.remaining_s() < self.ttl_s / 2:
                return None
            log.warning("renewing %s failed (tried again): %s", lease.name, exc)
            return lease

    async def run(self) -> None:
        """Until cancelled: the heartbeat (with the sweep) and the listener."""
        await asyncio.gather(self._beat(), self._listen())

    def renew(self) -> None:
        """Renew every lease, in one statement; one taken over, or past its deadline unrenewed, is lost.

        A failed renewal gives the lease up at the last try before its deadline (the next beat may
        come after it): no other relay can take it over before then, so two never act at once."""
        if not self.leases:
            return
        try:
            renewed, taken = self.store.leases.renew_all(list(self.leases.values()))
        except StoreError as exc:
            log.warning("renewing this relay's %d leases failed (tried again): %s", len(self.leases), exc)
            for key, lease in list(self.leases.items()):
                if lease.remaining_s() < self.ttl_s / 2:
                    self.lost(key, "it could not be renewed before its deadline")
            return
        for lease in renewed:
            self.leases[lease.name.removeprefix(LEASE_PREFIX)] = lease
        for lease in taken:
            self.lost(lease.name.removeprefix(LEASE_PREFIX), "another relay took it over")

    async def sweep(self) -> None:
        """Take the conversations left with unanswered messages and no live owner, and answer them."""
        try:
            orphans = self.store.unowned_conversations(LEASE_PREFIX)
        except StoreError as exc:
            log.warning("looking for unanswered conversations failed: %s", exc)
            return
        for key in orphans:
            try:
                taken = self._serves(key) and self.take(key)
            except StoreError as exc:
                log.warning("taking %s failed: %s", key, exc)
                return
            if taken:
                log.info("taking over %s (its unanswered messages had no live owner)", key)
                self._pickup(key)

    async def _beat(self) -> None:
        while True:
            await self._sleep(self.ttl_s / 3)
            self.deferred.flush()
            self.renew()
            await self.sweep()
            later, self._pick_up_later = self._pick_up_later, set()
            for key in later:
                if self.lease(key) is not None:
                    self._pickup(key)
            self.on_beat()

    async def _listen(self) -> None:
        while True:
            try:
                async with self._notifier.listen(CHANNEL, *self.handlers) as notes:
                    for key in list(self.leases):  # what was journaled while nobody listened here
                        self._pickup(key)
                    for heard_nothing in self.on_listening:
                        heard_nothing()
                    await self.sweep()
                    async for note in notes:
                        if note.channel != CHANNEL:
                            task = asyncio.create_task(self.handlers[note.channel](note), name=f"note:{note.channel}")
                            self._handling.add(task)
                            task.add_done_callback(self._handling.discard)
                        elif self.lease(note.payload) is not None:
                            self._pickup(note.payload)
            except StoreError as exc:
                log.warning("listening for messages journaled by other relays failed (listening again): %s", exc)
            await self._sleep(_RELISTEN_S)


async def _run(work: Callable[[], Awaitable[None]]) -> None:
    await work()
