"""One conversation: its queue (one turn at a time), its ACP session binding, its stop."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any

from core.acp.client import AcpError
from core.acp.pool import RuntimePool
from core.acp.session import AcpSession
from core.acp.types import Notice
from core.agents import BUILTIN_AGENTS, agent_spec, choose_agent
from core.config import RelayConfig
from core.engine import wording
from core.engine.journal import Journal
from core.engine.messages import QueueItem
from core.engine.surface import Surface
from core.engine.tasks import TaskSet
from core.failures import is_session_lost
from core.store import ConversationRecord, LeaseLost, Store

__all__ = ["Conversation", "ConversationDeps"]

log = logging.getLogger("acp_relay.engine.conversation")


@dataclass(frozen=True, slots=True)
class ConversationDeps:
    """What a conversation needs from the relay around it."""

    config: RelayConfig
    store: Store
    journal: Journal
    pool: RuntimePool
    tasks: TaskSet
    run_turn: Callable[[Conversation, QueueItem], Coroutine[Any, Any, None]]
    #: The conversation has nothing left to do (the engine may drop it from memory).
    on_idle: Callable[[Conversation], None]
    #: The conversation's session is gone: its "allow for this session" choices go with it.
    forget_approvals: Callable[[str], None]
    cancel_wait_s: float


class Conversation:
    """Messages are handled one turn at a time, in arrival order; other conversations run alongside."""

    def __init__(self, key: str, surface: Surface, deps: ConversationDeps) -> None:
        self.key = key
        self.surface = surface
        self.deps = deps
        self.queue: deque[QueueItem] = deque()
        self.session: AcpSession | None = None
        self.turn_task: asyncio.Task[None] | None = None
        self.worker: asyncio.Task[None] | None = None
        self.stopping = False
        self.cancellable = True  # False while the final answer is being delivered
        #: Another relay owns the conversation now: nothing more is sent or written from here.
        self.disowned = False
        self._binding = asyncio.Lock()
        rec = deps.store.get_conversation(key)
        self.context_pct: float | None = rec.context_pct if rec is not None else None
        self._stored_context = self.context_pct  # what the store has, so a turn that changed nothing costs no read

    # -- the store's view ----------------------------------------------------------------

    def record(self) -> ConversationRecord:
        """The stored record, or a blank one for a conversation not saved yet."""
        rec = self.deps.store.get_conversation(self.key)
        if rec is None:
            rec = ConversationRecord(self.key, agent="", cwd="")
        return rec

    def _owner(self) -> Store:
        """The store for this conversation's writes (fenced by its lease when relays share the store)."""
        return self.deps.journal.fenced(self.key)

    # -- session binding -----------------------------------------------------------------

    async def ensure_session(self, notify: list[Notice]) -> AcpSession:
        """The live ACP session: reuse, ``session/load`` after a restart, else a new one.

        A session that cannot be restored starts a new one WITH a notice, never silently.
        """
        async with self._binding:  # two callers (a turn, a model switch) must not make two sessions
            return await self._ensure_session(notify)

    async def _ensure_session(self, notify: list[Notice]) -> AcpSession:
        live = self.session
        if live is not None and live.unresponsive:  # the agent never ended a turn on it
            self.drop_session()
            notify.append(Notice(wording.SESSION_SET_ASIDE, key="session"))
            live = None
        if live is not None and live.runtime.alive and live.session_id in live.runtime.sessions:
            return live  # the steady state: no PATH lookup, no store read, no pool lock
        rec = self.record()
        if rec.agent and rec.agent not in (self.deps.config.agents or BUILTIN_AGENTS):
            # A config change removed this conversation's agent: its session belongs to that agent.
            gone = rec.agent
            rec = replace(rec, agent="", cwd="", session_id=None, session_meta={})
            notify.append(Notice(wording.agent_gone_text(gone, choose_agent(self.deps.config)[0]), key="session"))
        name, agent = choose_agent(self.deps.config, rec.agent or None)
        spec = agent_spec(name, agent, rec.cwd or None)
        runtime = await self.deps.pool.acquire(spec)
        session = runtime.sessions.get(rec.session_id) if rec.session_id else None
        if rec.session_id and session is None:
            if runtime.load_supported:
                try:
                    session = await runtime.load_session(rec.session_id, meta=rec.session_meta or None)
                except AcpError as exc:
                    if not is_session_lost(exc):
                        raise
                    notify.append(Notice(wording.SESSION_LOST, key="session"))
            else:
                notify.append(Notice(wording.SESSION_NOT_RESUMABLE, key="session"))
        if session is None:
            session = await runtime.new_session()
        if rec.model and rec.model != session.current_model and rec.model in session.models:
            await session.set_model(rec.model)
        self.session = session
        meta = session.load_meta() or (rec.session_meta if session.session_id == rec.session_id else {})
        self._owner().save_conversation(
            replace(rec, agent=name, cwd=spec.cwd, session_id=session.session_id, session_meta=meta))
        return session

    def drop_session(self) -> None:
        """Forget the binding (the agent lost the session): the next turn starts a new one."""
        rec = self.record()
        if self.session is not None:
            self.session.runtime.forget(self.session.session_id)
        self.session = None
        self._owner().save_conversation(replace(rec, session_id=None, session_meta={}))

    def reset(self) -> int:
        """Start a new generation durably; the next message starts a new ACP session."""
        if self.session is not None:
            self.session.runtime.forget(self.session.session_id)
        self.session = None
        self.context_pct = self._stored_context = None  # the reset clears the stored one too
        self.deps.forget_approvals(self.key)
        return self._owner().reset_conversation(self.key)

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

    def disown(self) -> None:
        """Another relay owns the conversation now: drop the queue and stop the turn without a word
        (what is left unanswered is the new owner's to answer)."""
        self.disowned = True
        self.queue.clear()
        for task in (self.turn_task, self.worker):
            if task is not None and not task.done():
                task.cancel()

    async def _work(self) -> None:
        while self.queue and not self.disowned:
            item = self.queue.popleft()
            self.stopping = False
            self.cancellable = True
            turn = asyncio.create_task(self.deps.run_turn(self, item), name=f"turn-{self.key}")
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
            if self.disowned:
                return
            try:
                self.deps.journal.complete(item.message)
                self._save_context()
            except LeaseLost:
                return
        self.deps.on_idle(self)

    def _save_context(self) -> None:
        if self.context_pct == self._stored_context:
            return
        rec = self.deps.store.get_conversation(self.key)
        if rec is not None:
            self._owner().save_conversation(replace(rec, context_pct=self.context_pct))
            self._stored_context = self.context_pct

    @property
    def idle(self) -> bool:
        """Nothing runs and nothing waits."""
        return not self.busy and not self.queue and (self.worker is None or self.worker.done())

    async def stop(self) -> str:
        """Cancel the running turn; return once it has really ended.

        Returns "idle" (nothing ran), "stopped", or "unconfirmed": the agent ignored the cancel, so
        its session is set aside (the next message starts a new one) instead of staying busy forever.
        """
        turn = self.turn_task
        if turn is None or turn.done():
            return "idle"
        self.stopping = True
        session = self.session
        if session is not None and session.busy:
            await session.cancel(wait_s=self.deps.cancel_wait_s)
        if not turn.done() and self.cancellable:
            turn.cancel()  # waiting in the retry ladder or on start-up: nothing reached the agent
        await asyncio.wait({turn})
        if session is not None and session.unresponsive:
            self.drop_session()
            return "unconfirmed"
        return "stopped"
