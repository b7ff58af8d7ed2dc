"""The core's side of the ``Host`` a surface is launched with (``core.plugin.Host``).

One ``Hosting`` per relay gives each surface its ``SurfaceHost``. What used to be solved by each
surface lives here once: the order of a conversation's messages (``ordered`` for the surface's own
awaits before it hands a message over, ``Lanes`` for the core's handling after it), the allow-list,
the surface's state in the store, notices at the chat's pace, and the surface's own tasks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from core.engine.batched import together
from core.engine.delivery import Outbox
from core.engine.engine import Engine
from core.engine.lanes import Lanes
from core.engine.messages import ButtonPress, InboundMessage, PressResult
from core.engine.panel import PanelControls
from core.engine.receiving import Receiver
from core.engine.surface import DeliveryError, Surface
from core.engine.tasks import TaskSet
from core.plugin import Controls, SurfaceState
from core.rounds import Round
from core.store import Note, Notifier, Store

__all__ = ["Hosting", "StoreState", "SurfaceHost"]

log = logging.getLogger("acp_relay.engine.host")


class StoreState:
    """A surface's rows of the store's ``offsets`` table (``SurfaceState``)."""

    def __init__(self, store: Store, surface: str) -> None:
        self._store = store
        self._surface = surface

    def get(self, key: str) -> str | None:
        """The value saved under ``key``, or None."""
        return self._store.get_offset(self._surface, key)

    def set(self, key: str, value: str) -> None:
        """Save ``value`` under ``key``, noting the time."""
        self._store.set_offset(self._surface, key, value)

    def items(self, prefix: str = "") -> dict[str, str]:
        """Every key starting with ``prefix``, with its value."""
        return self._store.offsets(self._surface, prefix)

    def prune(self, older_than_s: float, prefix: str = "") -> int:
        """Forget the keys starting with ``prefix`` not written for ``older_than_s``."""
        return self._store.prune_offsets(self._surface, older_than_s, prefix)

    def delete(self, keys: Sequence[str]) -> None:
        """Forget ``keys``."""
        self._store.delete_offsets(self._surface, keys)


class Hosting:
    """Every surface's host in one relay, sharing the per-conversation lanes of the handling."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.lanes = Lanes("handling")
        self.controls = PanelControls(engine)
        self.hosts: dict[str, SurfaceHost] = {}
        self._lines: dict[str, asyncio.Lock] = {}
        #: Messages submitted in this round of the event loop, journaled together at its end (``submit``).
        self._submitted: Round[InboundMessage, None] = Round(self._journal)

    def host(self, name: str) -> SurfaceHost:
        """The host of the surface ``name`` (made on first use)."""
        if name not in self.hosts:
            self.hosts[name] = SurfaceHost(self, name)
        return self.hosts[name]

    @property
    def busy(self) -> bool:
        """A message or a notice is still being handled."""
        return self.lanes.busy

    @asynccontextmanager
    async def ordered(self, key: str) -> AsyncIterator[None]:
        """A place in ``key``'s line (first come, first served; forgotten once nobody waits)."""
        lock = self._lines.setdefault(key, asyncio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and self._lines.get(key) is lock:
                del self._lines[key]

    async def submit(self, message: InboundMessage) -> None:
        """``SurfaceHost.submit``: journaled when this returns, with every message submitted in the same
        round of the event loop, in one transaction (a burst of conversations paid a commit each, ahead
        of every first answer: issue 24)."""
        if self.engine.ownership is not None:
            # Relays sharing a store: taking a conversation writes its lease and notes it in memory, which
            # a batch rolled back would leave wrong: one message at a time.
            self.take(message)
            return
        await self._submitted.submit(message)

    def _journal(self, messages: list[InboundMessage]) -> list[None]:
        """Journal ``messages`` in one transaction, then hand each over in order; when the store fails,
        each submitter gets its error and none is handed over (none is journaled)."""
        with together(self.engine.store, len(messages)):
            thens = [self.engine.accept(message) for message in messages]
        for message, then in zip(messages, thens, strict=True):
            if then is not None:
                self.lanes.put(message.conversation_key, then)
        return [None] * len(messages)

    def take(self, message: InboundMessage, *, done: asyncio.Future[None] | None = None) -> None:
        """Journal ``message`` now and queue the rest of its handling in its conversation's lane, after
        every message submitted before it; ``done`` is set once it is handled (or found nothing to do)."""
        self._submitted.flush()  # what was submitted before it is journaled and handed over first
        then = self.engine.accept(message)
        if then is None:
            if done is not None:
                done.set_result(None)
            return
        if done is None:
            self.lanes.put(message.conversation_key, then)
            return

        async def job() -> None:
            try:
                await then()
            finally:
                if not done.done():
                    done.set_result(None)

        self.lanes.put(message.conversation_key, job)

    async def close(self) -> None:
        """Stop handling (what is not handled yet stays journaled) and every surface's tasks."""
        await self.lanes.close()
        for host in self.hosts.values():
            await host.tasks.close()


class SurfaceHost:
    """``core.plugin.Host`` for one surface."""

    def __init__(self, hosting: Hosting, name: str) -> None:
        self.name = name
        self._hosting = hosting
        self._engine = hosting.engine
        self.tasks = TaskSet()
        self.state: SurfaceState = StoreState(self._engine.store, name)
        self.controls: Controls = hosting.controls
        self.queue_limit = self._engine.config.engine.queue_limit

    @property
    def _outbox(self) -> Outbox:
        return self._engine.outbox

    def attach(self, surface: Surface, allowed_user_ids: Collection[str | int]) -> None:
        """Serve ``surface``; only ``allowed_user_ids`` may use the agent through it."""
        if surface.name != self.name:
            raise ValueError(f"the {self.name} surface's host cannot serve a surface named {surface.name!r}")
        self._engine.attach(surface, allowed_user_ids)

    def permits(self, user_id: str) -> bool:
        """``user_id`` is on this surface's allow-list."""
        return self._engine.permits(self.name, user_id)

    async def submit(self, message: InboundMessage) -> None:
        """Journaled when this returns (with the others submitted at once); handled afterwards, in
        arrival order per conversation."""
        await self._hosting.submit(message)

    async def handle(self, message: InboundMessage) -> None:
        """Journaled, and handled, when this returns."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._hosting.take(message, done=done)
        await asyncio.shield(done)  # a surface giving up waiting does not cancel the handling

    def ordered(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold ``key``'s place in line (see ``Host.ordered``)."""
        return self._hosting.ordered(f"{self.name}:{key}")

    def reject(self, message_id: str, reason: str) -> None:
        """Stored as rejected: never answered, never replayed."""
        self._engine.reject(self.name, message_id, reason)

    async def press(self, press: ButtonPress) -> PressResult:
        """Resolve a button press once."""
        return await self._engine.handle_button(press)

    def notify(self, conversation_key: str, markdown: str, *, reply_to: str | None = None,
               private_to: str | None = None) -> None:
        """A notice of the surface's own, after what waits in the conversation, at the chat's pace."""
        surface = self._engine.surfaces.get(self.name)
        if surface is None:
            log.warning("a notice for %s before its surface was attached was dropped", conversation_key)
            return

        async def say() -> None:
            if private_to is not None:  # only that person sees it: the platform's private reply
                asked = InboundMessage(self.name, conversation_key, private_to, "", reply_to or "")
                await self._outbox.reply(surface, asked, markdown, private=True)
                return
            try:
                await self._outbox.streamer(surface, conversation_key).post(markdown, reply_to=reply_to)
            except DeliveryError as exc:
                log.warning("could not deliver a notice in %s: %s", conversation_key, exc)

        self._hosting.lanes.put(conversation_key, say)

    def receiver(self, connect: Callable[[], Awaitable[None]], *, first_delay_s: float = 1.0,
                 max_delay_s: float = 60.0, healthy_after_s: float = 60.0,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> Receiver:
        """A ``Receiver`` named after the surface."""
        return Receiver(self.name, connect, first_delay_s=first_delay_s, max_delay_s=max_delay_s,
                        healthy_after_s=healthy_after_s, sleep=sleep)

    async def exclusive(self, name: str, work: Callable[[], Awaitable[None]]) -> None:
        """``work`` while this relay holds ``<surface>:<name>`` (relays sharing a store), else at once."""
        ownership = self._engine.ownership
        if ownership is None:
            await work()
            return
        await ownership.exclusive(f"{self.name}:{name}", work)

    @property
    def shared(self) -> bool:
        """Other relays share the store (``Host.shared``)."""
        return self._engine.ownership is not None

    @property
    def _channel(self) -> str:
        return f"surface_{self.name}"

    def broadcast(self, payload: str) -> None:
        """To this surface on every relay sharing the store (``Host.broadcast``)."""
        if self._engine.ownership is not None:
            Notifier(self._engine.store).notify(self._channel, payload)

    def on_broadcast(self, handle: Callable[[str], Awaitable[None]], missed: Callable[[], None]) -> None:
        """Handle what ``broadcast`` sent (``Host.on_broadcast``): a channel of the ownership's listener."""
        ownership = self._engine.ownership
        if ownership is None:
            return

        async def on_note(note: Note) -> None:
            await handle(note.payload)

        ownership.handlers[self._channel] = on_note
        ownership.on_listening.append(missed)

    def data_path(self, suffix: str = ".db") -> str:
        """``relay.db`` -> ``relay-<name><suffix>`` beside it; ``:memory:`` stays in memory. With a
        PostgreSQL store, beside ``store.path`` all the same (the surface's file is this relay's own)."""
        store = self._engine.store.path
        if self._engine.store.backend.kind != "sqlite":
            store = self._engine.config.store.path
        if store == ":memory:":
            return store
        path = Path(store).expanduser()
        return str(path.with_name(f"{path.stem}-{self.name}{suffix}"))
