"""One conversation: its queue (one turn at a time), its ACP session binding, its stop."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from dataclasses import dataclass, field

from core.acp.pool import RuntimePool
from core.acp.session import AcpSession
from core.config import RelayConfig
from core.engine.approvals import Approvals
from core.engine.batched import Batched
from core.engine.binding import SessionBinding
from core.engine.choices import ModelChoices
from core.engine.journal import Journal
from core.engine.messages import QueueItem
from core.engine.picks import Picks
from core.engine.receipts import Receipts
from core.engine.reply import TurnScope
from core.engine.surface import DeliveryError, Surface
from core.engine.tasks import TaskSet
from core.engine.turn import TurnRunner
from core.store import LeaseLost, Store, StoreError

__all__ = ["Conversation", "ConversationDeps"]

log = logging.getLogger("acp_relay.engine.conversation")


@dataclass(slots=True)
class ConversationDeps:
    """What a conversation needs from the relay around it (one, shared by every conversation)."""

    config: RelayConfig
    store: Store
    journal: Journal
    pool: RuntimePool
    tasks: TaskSet
    #: Runs each turn.
    turns: TurnRunner
    #: The conversation's "allow for this session" choices and model lists (a reset forgets them).
    approvals: Approvals
    choices: ModelChoices
    cancel_wait_s: float
    #: The receipts of queued messages: settled as their messages leave the queue.
    receipts: Receipts
    #: The open pickers (projects, agents, sessions, modes); a reset expires them.
    picks: Picks = field(default_factory=Picks)
    #: Where a new session is kept in the store, with the others of the same round (None: on its own,
    #: as relays sharing a store do: each conversation's writes are fenced by its own lease).
    saves: Batched | None = None


class Conversation:
    """Messages are handled one turn at a time, in arrival order; other conversations run alongside."""

    def __init__(self, key: str, surface: Surface, deps: ConversationDeps) -> None:
        self.key = key
        self.surface = surface
        self.deps = deps
        # Its writes are fenced by this relay's lease when relays share the store (a conversation is
        # made once the lease is held, and dropped when it is lost).
        self.binding = SessionBinding(key, deps.config, deps.journal.fenced(key), deps.pool, saves=deps.saves)
        self.queue: deque[QueueItem] = deque()
        self.turn_task: asyncio.Task[None] | None = None
        self.worker: asyncio.Task[None] | None = None
        self.running: TurnScope | None = None  # the running turn's place, while there is one
        self.menu: tuple[tuple[str, str], ...] = ()  # the agent's commands the surface was last given
        #: Another relay owns the conversation now: nothing more is sent or written from here.
        self.disowned = False

    @property
    def session(self) -> AcpSession | None:
        """The ACP session bound now (None: the next turn binds one)."""
        return self.binding.session

    @property
    def context_pct(self) -> float | None:
        """The share of the agent's context window in use (as the agent last said)."""
        return self.binding.context_pct

    def reset(self) -> int:
        """Start a new generation durably; the next message starts a new ACP session."""
        self.deps.approvals.forget_session(self.key)
        self.deps.choices.forget(self.key)
        self.deps.picks.forget(self.key)
        return self.binding.reset()

    # -- queue and turns -----------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A turn is running."""
        return self.turn_task is not None and not self.turn_task.done()

    def enqueue(self, item: QueueItem) -> int:
        """Queue a message; returns its position (0 = runs now). The caller checks the bound."""
        self.queue.append(item)
        position = len(self.queue) - (0 if self.busy else 1)
        if self.worker is None or self.worker.done():
            self.worker = self.deps.tasks.spawn(self._work(), name=f"conversation-{self.key}")
        return position

    def open_ahead(self) -> None:
        """Bind the session now, while the person writes (after a reset, a switch, a restart's question):
        their next message's answer does not wait for a session or an agent to start. Not while a turn
        runs or waits: the turn binds its own."""
        if self.idle and not self.disowned:
            self.deps.tasks.spawn(self._open_ahead(), name=f"open-{self.key}")

    async def _open_ahead(self) -> None:
        await self.binding.open_ahead()
        if (session := self.binding.session) is not None:
            await self.follow_commands(session)

    async def follow_commands(self, session: AcpSession) -> None:
        """Give the surface ``session``'s commands as the agent lists them, not only once a turn ends: after
        a switch the chat's menu (Telegram's) offers the new agent's commands before anyone writes. An
        agent lists them just after it answers ``session/new``: a session that lists none yet leaves the
        menu as it is (clearing it, to fill it a moment later, would be two calls for one change)."""

        this = weakref.ref(self)  # the runtime keeps the session: it must not keep the conversation too

        def listed() -> None:
            conv = this()
            if conv is not None and conv.binding.session is session and conv.idle and not conv.disowned:
                conv.deps.tasks.spawn(conv.show_commands(), name=f"commands-{conv.key}")

        session.on_commands = listed
        if session.commands:
            await self.show_commands()

    def disown(self) -> None:
        """Another relay owns the conversation now: drop the queue and stop the turn without a word
        (what is left unanswered is the new owner's to answer)."""
        self.disowned = True
        self.queue.clear()
        if self.running is not None:
            self.running.disowned = True
        for task in (self.turn_task, self.worker):
            if task is not None and not task.done():
                task.cancel()
    def drop_queue(self) -> int:
        """Empty the queue (a stop): the dropped messages are answered never, also not after a restart;
        returns how many there were."""
        dropped = list(self.queue)
        self.queue.clear()
        for item in dropped:
            self.deps.journal.complete(item.message)
            self.deps.receipts.settle(self.surface, self.key, item.message, "dropped")
        return len(dropped)

    async def _work(self) -> None:
        while self.queue and not self.disowned:
            await self.deps.journal.settled(self.key)  # no new turn while the database is away
            if not self.queue or self.disowned:
                return
            item = self.queue.popleft()
            self.deps.receipts.settle(self.surface, self.key, item.message, "answering")
            scope = self.running = TurnScope(self.key, self.surface, self.binding)
            turn = asyncio.create_task(self.deps.turns.run(scope, item), name=f"turn-{self.key}")
            self.turn_task = turn
            try:
                await asyncio.shield(turn)
            except asyncio.CancelledError:
                if not turn.done():  # the engine is shutting down: leave the message unfinished
                    turn.cancel()
                    await asyncio.wait({turn})
                    raise
            except LeaseLost:
                return  # the new owner answers it (``disown`` stops the rest)
            except Exception:  # a bug past the turn's own funnel must not stall the queue behind it
                log.exception("turn in %s failed unexpectedly", self.key)
            self.running = None
            if self.disowned:
                return
            try:
                if not scope.completed:  # the reply did not get to it (it failed, or shows nothing)
                    self.deps.journal.complete(item.message)  # (kept while the database is away)
                self.binding.save_context()
            except LeaseLost:
                return
            except StoreError as exc:  # the context figure and cost: shown again after the next turn
                log.warning("could not save the context use of %s: %s", self.key, exc)
            await self.show_commands()

    async def show_commands(self) -> None:
        """Give the surface the agent's own commands when they changed (Telegram's menu of this chat)."""
        session = self.binding.session
        commands = session.commands if session is not None else ()
        if commands == self.menu:
            return
        self.menu = commands
        try:
            await self.surface.agent_commands(self.key, commands)
        except DeliveryError as exc:  # a menu is a nicety: the commands can still be typed
            log.warning("could not show the agent's commands in %s: %s", self.key, exc)

    @property
    def idle(self) -> bool:
        """Nothing runs and nothing waits."""
        return not self.busy and not self.queue and (self.worker is None or self.worker.done())

    async def stop(self) -> str:
        """Cancel the running turn; return once it has really ended.

        Returns "idle" (nothing ran), "stopped", or "unconfirmed": the agent ignored the cancel, so
        its session is set aside (the next message starts a new one) instead of staying busy forever.
        """
        turn, scope = self.turn_task, self.running
        if turn is None or turn.done() or scope is None:
            return "idle"
        scope.stopping = True
        session = self.binding.session
        if session is not None and session.busy:
            await session.cancel(wait_s=self.deps.cancel_wait_s)
        if not turn.done() and scope.cancellable:
            turn.cancel()  # waiting in the retry ladder or on start-up: nothing reached the agent
        await asyncio.wait({turn})
        if session is not None and session.unresponsive:
            self.binding.drop()
            return "unconfirmed"
        return "stopped"
