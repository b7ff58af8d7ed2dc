"""A conversation's ACP session: reused, resumed or loaded after a restart, else new; its context use,
title and cost.

The binding is what a conversation's turns, its commands and the dashboard's controls share of the
agent: which session answers it (kept in the store, so a restarted relay reattaches it: with
``session/resume`` where the agent offers it, else ``session/load``), and what the session reports
of itself: the share of the context window in use (``AcpSession.context_pct``, the one place it is
computed), its title and its cumulative cost, which the store keeps between sessions. The cost of a
conversation is the sum of the last cost each of its sessions reported.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from core.acp.pool import RuntimePool
from core.acp.runtime import AcpRuntime
from core.acp.session import AcpSession
from core.acp.spec import AgentSpec
from core.acp.switching import apply_mode, reattach
from core.acp.types import Cost, Notice
from core.agents import BUILTIN_AGENTS, choose_agent, chosen_spec
from core.config import RelayConfig
from core.engine import switch_wording, wording
from core.engine.batched import Batched
from core.errors import AcpError, RelayError
from core.failures import is_session_lost
from core.store import ConversationRecord, Store

log = logging.getLogger("acp_relay.engine.binding")

__all__ = ["MAX_COSTED_SESSIONS", "SessionBinding", "total_costs"]

#: The sessions whose cost a conversation remembers (the oldest go first).
MAX_COSTED_SESSIONS = 50


def total_costs(costs: dict[str, dict[str, object]]) -> dict[str, float]:
    """Currency -> amount, summed over the sessions' last reported costs (the store's ``costs``)."""
    totals: dict[str, float] = {}
    for cost in costs.values():
        amount, currency = cost.get("amount"), cost.get("currency")
        if isinstance(amount, int | float) and isinstance(currency, str):
            totals[currency] = totals.get(currency, 0.0) + float(amount)
    return totals


class SessionBinding:
    """The ACP session of the conversation under ``key``."""

    __slots__ = ("_ahead", "_fresh", "_lock", "_stored_context", "_stored_known", "_untold", "config", "key", "pool",
                 "saves", "session", "store")

    def __init__(self, key: str, config: RelayConfig, store: Store, pool: RuntimePool, *,
                 saves: Batched | None = None) -> None:
        """``saves``: where a new session is kept in ``store`` with the others of the same round (None: at once)."""
        self.key = key
        self.config = config
        self.store = store
        self.pool = pool
        self.saves = saves
        self.session: AcpSession | None = None
        self._lock = asyncio.Lock()
        # What the store has, so a turn that changed nothing costs no write (nor a read): taken from
        # the record when it is first read (the first turn reads it anyway), not when the conversation
        # is made.
        self._stored_context: float | None = None
        self._stored_known = False
        self._fresh: set[str] = set()  # sessions this binding started: their cost began at nothing
        self._untold: list[Notice] = []  # what binding a session ahead had to say, for the next turn to say
        self._ahead: str | None = None  # a new session opened ahead that nothing has used yet

    def record(self) -> ConversationRecord:
        """The stored record, or a blank one for a conversation not saved yet."""
        rec = self.store.get_conversation(self.key)
        self._stored_context, self._stored_known = (rec.context_pct if rec is not None else None), True
        if rec is None:
            rec = ConversationRecord(self.key, agent="", cwd="")
        return rec

    @property
    def context_pct(self) -> float | None:
        """The share of the context window in use: as the live session last said, else as stored."""
        live = self.session.context_pct if self.session is not None else None
        if live is None and not self._stored_known:
            self.record()
        return live if live is not None else self._stored_context

    def save_context(self) -> None:
        """Keep the context use, the session's title and its cost in the store (after a turn), when changed."""
        pct, session = self.context_pct, self.session
        if pct == self._stored_context and (session is None or (not session.title and session.cost is None)):
            return  # the context use is as stored, and the session has no title or cost to keep
        rec = self.store.get_conversation(self.key)
        if rec is None:
            return
        changed = replace(rec, context_pct=pct)
        if session is not None and session.session_id == rec.session_id:
            if session.title:
                changed.title = session.title
            if session.cost is not None:
                costs = {k: v for k, v in rec.costs.items() if k != session.session_id}
                costs[session.session_id] = {"amount": session.cost.amount, "currency": session.cost.currency}
                changed.costs = dict(list(costs.items())[-MAX_COSTED_SESSIONS:])
        if changed != rec:
            self.store.save_conversation(changed)
            self._stored_context = pct

    def cost_mark(self) -> Cost | None:
        """What the live session has cost so far, at the start of a turn (``turn_cost`` takes it back);
        nothing yet for a session this binding started."""
        session = self.session
        if session is None:
            return None
        if session.cost is None and session.session_id in self._fresh:
            return Cost(0.0, "")
        return session.cost

    def turn_cost(self, mark: Cost | None) -> Cost | None:
        """What the turn since ``mark`` cost, when the agent said both before and after (None otherwise)."""
        now = self.session.cost if self.session is not None else None
        if now is None or mark is None or (mark.currency and mark.currency != now.currency):
            return None
        return Cost(max(0.0, now.amount - mark.amount), now.currency)

    async def ensure(self, notify: list[Notice]) -> AcpSession:
        """The live ACP session: reuse, ``session/load`` after a restart, else a new one.

        A session that cannot be restored starts a new one WITH a notice, never silently.
        """
        async with self._lock:  # two callers (a turn, a model switch) must not make two sessions
            notify += self._untold
            self._untold, self._ahead = [], None
            return await self._ensure(notify)

    @property
    def opened_ahead(self) -> str | None:
        """The session opened ahead that nothing has used yet (nothing in it to list or come back to)."""
        return self._ahead

    async def open_ahead(self) -> None:
        """Bind the session now, while the person writes their next message (after a reset or a switch: a
        new session, its agent started when needed; after a restart: the old one reattached), so that
        message's answer waits for none of it. What binding had to say (a session lost, a mode not kept)
        waits for the next ``ensure``; a failure is only logged: the next turn tries again and says it."""
        async with self._lock:
            before = self.session
            try:
                session = await self._ensure(self._untold)
            except RelayError as exc:
                log.info("could not open the session of %s ahead: %r", self.key, exc)
                return
            if session is not before and session.session_id in self._fresh:
                self._ahead = session.session_id

    async def _ensure(self, notify: list[Notice]) -> AcpSession:
        live = self.session
        if live is not None and live.unresponsive:  # the agent never ended a turn on it
            self.drop()
            notify.append(Notice(wording.SESSION_SET_ASIDE, key="session"))
            live = None
        if live is not None and live.runtime.alive and live.session_id in live.runtime.sessions:
            return live  # the steady state: no PATH lookup, no store read, no pool lock
        rec = self.record()
        if rec.agent and rec.agent not in (self.config.agents or BUILTIN_AGENTS):
            # A config change removed this conversation's agent: its session belongs to that agent.
            gone = rec.agent
            rec = replace(rec, agent="", cwd="", session_id=None, session_meta={})
            notify.append(Notice(wording.agent_gone_text(gone, choose_agent(self.config)[0]), key="session"))
        name, spec = chosen_spec(self.config, rec.agent or None, rec.cwd or None)
        runtime = await self.pool.acquire(spec)
        session = runtime.sessions.get(rec.session_id) if rec.session_id else None
        if rec.session_id and session is None:
            if runtime.resume_supported or runtime.load_supported:
                try:
                    session = await reattach(runtime, rec.session_id, rec.session_meta)
                except AcpError as exc:
                    if not is_session_lost(exc):
                        raise
                    notify.append(Notice(wording.SESSION_LOST, key="session"))
            else:
                notify.append(Notice(wording.SESSION_NOT_RESUMABLE, key="session"))
        if session is None:
            session = await runtime.new_session()
            self._fresh.add(session.session_id)
            if rec.mode:
                await self._restore_mode(session, rec.mode, notify)
        if rec.model and rec.model != session.current_model and rec.model in session.models:
            await session.set_model(rec.model)
        self.session = session
        meta = session.load_meta() or (rec.session_meta if session.session_id == rec.session_id else {})
        saved = replace(rec, agent=name, cwd=spec.cwd, session_id=session.session_id, session_meta=meta)
        if self.saves is None:
            self.store.save_conversation(saved)
        else:  # kept before the prompt is sent, in one commit with the new sessions of a burst
            await self.saves.write(lambda: self.store.save_conversation(saved))
        return session

    async def _restore_mode(self, session: AcpSession, mode: str, notify: list[Notice]) -> None:
        """The mode chosen from the chat, on a new session; said when the agent no longer takes it."""
        for choice in mode.splitlines():
            try:
                await apply_mode(session, choice)
            except (AcpError, LookupError) as exc:
                notify.append(Notice(switch_wording.mode_not_kept_text(choice), key=f"mode-{choice}"))
                log.info("the mode %s chosen in %s was not applied: %r", choice, self.key, exc)

    def spec(self, rec: ConversationRecord | None = None) -> AgentSpec:
        """The agent (and folder) the conversation runs now, as stored."""
        rec = rec or self.record()
        return chosen_spec(self.config, rec.agent or None, rec.cwd or None)[1]

    async def runtime(self) -> AcpRuntime:
        """The runtime of the conversation's agent and folder (started when needed), without binding a session."""
        live = self.session
        if live is not None and live.runtime.alive and isinstance(live.runtime, AcpRuntime):
            return live.runtime
        return await self.pool.acquire(self.spec())

    async def switch(self, rec: ConversationRecord) -> None:
        """Move to another agent, folder or mode (``rec``): the next turn starts a new session there. The
        old session is let go, not closed: it stays with the agent, for the sessions list."""
        async with self._lock:
            if self.session is not None:
                await self._let_go(self.session)
            self.session = None
            self._untold = []  # about the session let go
            self.store.save_conversation(replace(rec, session_id=None, session_meta={}, title=""))

    async def attach(self, session_id: str) -> tuple[AcpSession, bool]:
        """Continue the agent's session ``session_id`` (``session/resume``, else ``session/load``,
        whose replayed history is not shown) and say whether history was replayed; the agent's error,
        and nothing changed, when it fails."""
        async with self._lock:
            rec = self.record()
            spec = self.spec(rec)
            runtime = await self.pool.acquire(spec)
            replayed = session_id not in runtime.sessions and not runtime.resume_supported
            session = await reattach(runtime, session_id, {})
            if self.session is not None and self.session is not session:
                await self._let_go(self.session)
            self.session = session
            name, _ = choose_agent(self.config, rec.agent or None)
            self.store.save_conversation(replace(rec, agent=name, cwd=spec.cwd, session_id=session_id,
                                                 session_meta=session.load_meta(), title=session.title))
            return session, replayed

    async def close(self) -> None:
        """Let the agent free the live session (``session/close`` where it offers it) before a reset; one
        being opened ahead is let finish first (the reset must come after its record is kept)."""
        async with self._lock:
            session = self.session
        if session is not None:
            await self._close(session)

    async def _let_go(self, session: AcpSession) -> None:
        """Stop using ``session``: it stays with the agent, for the sessions list; one opened ahead and never
        used is closed instead (nothing in it to come back to)."""
        if session.session_id == self._ahead:
            self._ahead = None
            await self._close(session)
        else:
            session.runtime.forget(session.session_id)

    async def _close(self, session: AcpSession) -> None:
        if not isinstance(session.runtime, AcpRuntime):
            session.runtime.forget(session.session_id)
            return
        try:
            await session.runtime.close_session(session.session_id)
        except AcpError as exc:  # the reset or switch goes ahead: the agent keeps a session it would have freed
            log.info("session/close of %s failed: %r", self.key, exc)

    def drop(self) -> None:
        """Forget the session (the agent lost it, or never ended a turn on it): the next turn starts a new one."""
        rec = self.record()
        if self.session is not None:
            self.session.runtime.forget(self.session.session_id)
        self.session = None
        self.store.save_conversation(replace(rec, session_id=None, session_meta={}))

    def reset(self) -> int:
        """Start a new generation durably (the context use goes with the session); returns it."""
        if self.session is not None:
            self.session.runtime.forget(self.session.session_id)
        self.session = None
        self._stored_context, self._stored_known = None, True  # the reset clears the stored one too
        self._untold = []  # about the session let go
        return self.store.reset_conversation(self.key)
