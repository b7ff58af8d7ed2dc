"""What a surface plugin is, and the narrow host the core hands it (``launch(host, settings)``).

A surface package exports ONE object, a :class:`SurfacePlugin`, under the entry-point group
``acp_relay.surfaces`` (``core.loading`` finds them). It names the surface's config model (a
:class:`SurfaceSettings`, next to the adapter), the optional extra and the SDK modules it needs, and
its ``launch``/``check``/``doctor``. The module that defines it imports no SDK: ``check-config`` and
the "pip install 'acp-relay[telegram]'" sentence must work where the extra is not installed.

``launch`` receives a :class:`Host`, never the engine: messages handed over (journaled, then
answered in arrival order per conversation by the core), the one allow-list, the surface's own
state, paced notices, owned tasks, a ``Receiver`` factory, and the controls a panel needs. This
module is a leaf of the core (no engine, no config), so the config can ask the registry for the
surfaces' models without an import circle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from core.engine.messages import ButtonPress, ChoiceList, ConversationStatus, InboundMessage, PressResult
from core.engine.receiving import Receiver
from core.engine.surface import Launched, Surface
from core.engine.tasks import TaskSet

__all__ = [
    "LISTEN_BACKLOG",
    "Check",
    "ControlFailed",
    "Controls",
    "Doctor",
    "Host",
    "Launch",
    "Problems",
    "SurfacePlugin",
    "SurfaceSettings",
    "SurfaceState",
    "no_problems",
]

#: The accept queue a surface's HTTP server listens with (aiohttp's ``TCPSite(backlog=...)``; the kernel
#: caps it at ``net.core.somaxconn``). aiohttp's default, 128, overflows when a burst of people connect
#: while the relay's loop is busy: the kernel drops the rest of their handshakes, and each tries again
#: only a second later (issue 24: the dashboard's first text at 1,000 tabs at once).
LISTEN_BACKLOG = 1024

#: ``(JSON path inside the surface's section, one plain sentence)``, e.g. ``("token_env", "...")``.
Problems = list[tuple[str, str]]


class SurfaceSettings(BaseModel):
    """Base of a surface's config model (``surfaces.<name>`` in config.json): unknown keys are errors.

    Every ``*_env`` field names an environment variable holding a secret: its value is redacted from
    everything the relay sends and logs, whether the surface is enabled or not.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = False


S = TypeVar("S", bound=SurfaceSettings)
S_contra = TypeVar("S_contra", bound=SurfaceSettings, contravariant=True)


class SurfaceState(Protocol):
    """The surface's own small key-value state in the relay's store (positions, known threads).

    Namespaced by the surface: keys never clash with another surface's. Each write notes when it
    happened, so state no longer used can be pruned.
    """

    def get(self, key: str) -> str | None:
        """The value saved under ``key``, or None."""
        ...

    def set(self, key: str, value: str) -> None:
        """Save ``value`` under ``key`` (replacing it), and note the time."""
        ...

    def items(self, prefix: str = "") -> dict[str, str]:
        """Every key starting with ``prefix``, with its value, by key."""
        ...

    def prune(self, older_than_s: float, prefix: str = "") -> int:
        """Forget the keys starting with ``prefix`` not written for ``older_than_s``; returns how many."""
        ...

    def delete(self, keys: Sequence[str]) -> None:
        """Forget ``keys`` (one transaction; a key not there is no error)."""
        ...


class ControlFailed(Exception):
    """A control could not be carried out (the agent would not start, the model is unknown): ``str()``
    is the plain sentence to show the person, the same a turn would say."""


class Controls(Protocol):
    """What a panel does besides writing messages (the dashboard's Stop button, status and picker)."""

    async def stop(self, conversation_key: str) -> None:
        """End the conversation's running turn, as the stop command does; returns once it has ended.
        ``ControlFailed`` when the relay running the conversation (relays sharing a store) did not answer."""
        ...

    async def status(self, conversation_key: str) -> ConversationStatus:
        """Agent, model, folder, session, context and queue (never starts an agent); relays sharing a
        store: the owner's live view, else the stored one. ``ControlFailed`` when neither can be read."""
        ...

    async def models(self, conversation_key: str) -> tuple[str | None, tuple[str, ...]]:
        """The current model and the models the agent offers (starts the agent); ``ControlFailed``."""
        ...

    async def set_model(self, conversation_key: str, model: str) -> None:
        """Switch the conversation's model (before its first message too); ``ControlFailed``."""
        ...

    async def choices(self, conversation_key: str, kind: str, page: str = "") -> ChoiceList:
        """What ``kind`` ("project", "agent", "sessions", "mode") offers the conversation now (the
        sessions list starts the agent); ``page`` is an earlier list's ``more``. ``ControlFailed``."""
        ...

    async def choose(self, conversation_key: str, kind: str, value: str) -> str:
        """Switch to one of ``choices``' values; the sentence saying what happened (a refusal is a
        sentence too: nothing changed). ``ControlFailed`` when the agent failed."""
        ...


class Host(Protocol):
    """The core as one surface sees it (``launch(host, settings)``). Every call is about this surface."""

    #: The surface's name: the first part of its conversation keys.
    name: str
    #: The surface's own background tasks: named, logged when they fail, cancelled at shutdown.
    tasks: TaskSet
    state: SurfaceState
    controls: Controls
    #: Messages one conversation queues behind a running turn (``engine.queue_limit``): a surface
    #: catching up on what was missed hands over at most this many per conversation.
    queue_limit: int

    def attach(self, surface: Surface, allowed_user_ids: Collection[str | int]) -> None:
        """Serve ``surface`` (what the core calls to deliver); only ``allowed_user_ids`` may use the agent."""
        ...

    def permits(self, user_id: str) -> bool:
        """``user_id`` is on the allow-list (ask before downloading what a stranger attached)."""
        ...

    async def submit(self, message: InboundMessage) -> None:
        """Hand ``message`` over. When this returns it is journaled (or refused, or known as a
        redelivery), so the surface may confirm it to its platform; the core handles it afterwards,
        after every message submitted earlier in the same conversation. Raises ``StoreError`` when the
        store cannot journal it: do not confirm it, the platform sends it again."""
        ...

    async def handle(self, message: InboundMessage) -> None:
        """``submit``, and wait until the core has handled it (a command answered, a prompt queued):
        for a surface that must close something once the answer is out (a Discord interaction)."""
        ...

    def ordered(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold ``key``'s place in line: what the surface does under it (download an attachment, then
        ``submit``) happens after everything done earlier under the same key. ``key`` is a conversation
        key, or whatever unit the platform orders its events in (a channel)."""
        ...

    def reject(self, message_id: str, reason: str) -> None:
        """An update the surface cannot read (or cannot serve) after all: stored as rejected, never
        answered or replayed, so the surface confirms it and goes on. ``reason`` never quotes its text."""
        ...

    async def press(self, press: ButtonPress) -> PressResult:
        """A person pressed a button the core sent: applied once; answer the press with the result."""
        ...

    def notify(self, conversation_key: str, markdown: str, *, reply_to: str | None = None,
               private_to: str | None = None) -> None:
        """Say a notice of the surface's own in the conversation: after what is already waiting there,
        at the chat's pace, redacted; a failure is logged. ``reply_to``: the message it answers;
        ``private_to``: a user id, where only they should see it (if the platform can)."""
        ...

    def receiver(self, connect: Callable[[], Awaitable[None]], *, first_delay_s: float = 1.0,
                 max_delay_s: float = 60.0, healthy_after_s: float = 60.0,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> Receiver:
        """A ``Receiver`` that keeps ``connect`` (the receive loop) running: it reconnects after a delay
        growing from ``first_delay_s`` to ``max_delay_s`` (reset once a connection lived
        ``healthy_after_s``), and stops for good on a ``StartupError``."""
        ...

    async def exclusive(self, name: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` (a receive loop only one relay may run: Telegram's polling, Discord's gateway)
        while this relay alone holds it among relays sharing the store; the others wait their turn,
        and a relay that loses it has ``work`` cancelled. A relay alone just runs ``work``."""
        ...

    def data_path(self, suffix: str = ".db") -> str:
        """A file of the surface's own beside the relay's store (``relay.db`` -> ``relay-<name>.db``);
        ``:memory:`` when the store is in memory."""
        ...

    @property
    def shared(self) -> bool:
        """Other relays share this relay's store (PostgreSQL): what the surface keeps for everyone to see
        belongs in ``state``, and what it shows live reaches the other relays through ``broadcast``."""
        ...

    def broadcast(self, payload: str) -> None:
        """Send ``payload`` (under 8000 bytes) to this surface on every relay sharing the store, this one
        included (``on_broadcast``); nothing when the relay is alone. ``StoreError`` when it cannot."""
        ...

    def on_broadcast(self, handle: Callable[[str], Awaitable[None]], missed: Callable[[], None]) -> None:
        """Call ``handle`` with every payload ``broadcast`` on any relay sharing the store, in the order
        they were sent (each call in a task of its own: what ``handle`` does before its first ``await``
        keeps that order), and ``missed`` whenever this relay starts listening again (at start, after the
        database was lost): what was broadcast before was not heard. Register before the relay starts;
        neither is called when the relay is alone."""
        ...


Launch = Callable[[Host, S_contra], Awaitable[Launched]]
Check = Callable[[S_contra], Problems]
Doctor = Callable[[S_contra], Coroutine[Any, Any, list[tuple[bool, str]]]]


def no_problems(settings: SurfaceSettings) -> Problems:
    """The default ``check``: nothing to refuse before launching."""
    return []


@dataclass(frozen=True, slots=True)
class SurfacePlugin(Generic[S]):
    """One surface, as its package exports it (``PLUGIN``) and the entry point names it.

    ``check(settings)`` lists what ``launch`` would refuse (for ``check-config``, paths inside the
    surface's section); ``doctor(settings)`` checks the platform takes the credentials, as
    ``(ok, line)``. ``extra`` is the ``acp-relay[extra]`` that installs ``sdk_modules``; a surface whose
    SDK is missing is refused with one sentence naming it, before ``launch`` is called.
    """

    name: str
    settings: type[S]
    launch: Launch[S]
    check: Check[S] = no_problems
    doctor: Doctor[S] | None = None
    extra: str | None = None
    sdk_modules: tuple[str, ...] = ()
