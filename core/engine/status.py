"""Where a conversation stands, for the status command and the dashboard's panel (never starts an agent)."""

from __future__ import annotations

from core.acp.spec import resolve_cwd
from core.agents import BUILTIN_AGENTS, choose_agent
from core.config import RelayConfig
from core.engine.conversation import Conversation
from core.engine.messages import ConversationStatus
from core.store import ConversationRecord

__all__ = ["conversation_status"]


def conversation_status(config: RelayConfig, rec: ConversationRecord | None,
                        conv: Conversation | None) -> ConversationStatus:
    """Agent, model, folder, session, context and queue, from what is live and what is stored."""
    session = conv.session if conv is not None else None
    known = config.agents or BUILTIN_AGENTS
    agent = rec.agent if rec is not None and rec.agent in known else ""
    context = conv.context_pct if conv is not None else (rec.context_pct if rec is not None else None)
    return ConversationStatus(
        agent=agent or choose_agent(config)[0],
        model=(session.current_model if session else None) or (rec.model if rec else None),
        models=session.models if session else (),
        cwd=session.runtime.cwd if session else _cwd_of(config, rec),
        session_id=rec.session_id if rec is not None else None,
        context_pct=context,
        queue_length=len(conv.queue) if conv is not None else 0,
        busy=conv.busy if conv is not None else False,
        model_name=session.model_names.get(session.current_model or "") if session else None,
    )


def _cwd_of(config: RelayConfig, rec: ConversationRecord | None) -> str:
    """The folder the conversation's agent works in, resolved as the runtime will resolve it."""
    known = config.agents or BUILTIN_AGENTS
    wanted = rec.agent if rec is not None and rec.agent in known else None  # removed: the default
    _, agent = choose_agent(config, wanted)
    cwd = rec.cwd if rec is not None and rec.cwd else agent.cwd
    return str(resolve_cwd(cwd))
