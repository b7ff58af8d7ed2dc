"""A conversation's ACP session: reused, loaded after a restart, else new; and its context use.

The binding is what a conversation's turns, its commands and the dashboard's controls share of the
agent: which session answers it (kept in the store, so a restarted relay loads it again), and the
share of the context window in use, which the session reports (``AcpSession.context_pct``, the one
place it is computed) and the store keeps between sessions.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from core.acp.pool import RuntimePool
from core.acp.session import AcpSession
from core.acp.types import Notice
from core.agents import BUILTIN_AGENTS, agent_spec, choose_agent
from core.config import RelayConfig
from core.engine import wording
from core.errors import AcpError
from core.failures import is_session_lost
from core.store import ConversationRecord, Store

__all__ = ["SessionBinding"]


class SessionBinding:
    """The ACP session of the conversation under ``key``."""

    __slots__ = ("_lock", "_stored_context", "config", "key", "pool", "session", "store")

    def __init__(self, key: str, config: RelayConfig, store: Store, pool: RuntimePool) -> None:
        self.key = key
        self.config = config
        self.store = store
        self.pool = pool
        self.session: AcpSession | None = None
        self._lock = asyncio.Lock()
        rec = store.get_conversation(key)
        # What the store has, so a turn that changed nothing costs no write.
        self._stored_context: float | None = rec.context_pct if rec is not None else None

    def record(self) -> ConversationRecord:
        """The stored record, or a blank one for a conversation not saved yet."""
        rec = self.store.get_conversation(self.key)
        if rec is None:
            rec = ConversationRecord(self.key, agent="", cwd="")
        return rec

    @property
    def context_pct(self) -> float | None:
        """The share of the context window in use: as the live session last said, else as stored."""
        live = self.session.context_pct if self.session is not None else None
        return live if live is not None else self._stored_context

    def save_context(self) -> None:
        """Keep the context use in the store (after a turn), when it changed."""
        pct = self.context_pct
        if pct == self._stored_context:
            return
        rec = self.store.get_conversation(self.key)
        if rec is not None:
            self.store.save_conversation(replace(rec, context_pct=pct))
            self._stored_context = pct

    async def ensure(self, notify: list[Notice]) -> AcpSession:
        """The live ACP session: reuse, ``session/load`` after a restart, else a new one.

        A session that cannot be restored starts a new one WITH a notice, never silently.
        """
        async with self._lock:  # two callers (a turn, a model switch) must not make two sessions
            return await self._ensure(notify)

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
        name, agent = choose_agent(self.config, rec.agent or None)
        spec = agent_spec(name, agent, rec.cwd or None)
        runtime = await self.pool.acquire(spec)
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
        self.store.save_conversation(
            replace(rec, agent=name, cwd=spec.cwd, session_id=session.session_id, session_meta=meta))
        return session

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
        self._stored_context = None  # the reset clears the stored one too
        return self.store.reset_conversation(self.key)
