"""Where a conversation stands, for the status command and the dashboard's panel (never starts an agent)."""

from __future__ import annotations

from core.acp.session import AcpSession
from core.acp.spec import resolve_cwd
from core.agents import BUILTIN_AGENTS, choose_agent
from core.config import RelayConfig
from core.engine.binding import total_costs
from core.engine.conversation import Conversation
from core.engine.messages import ConversationStatus
from core.engine.switch_wording import cost_text
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
        project=rec.project if rec is not None and rec.project in config.projects else "",
        title=(session.title if session else "") or (rec.title if rec is not None else ""),
        mode=_mode(session, rec),
        cost=cost_text(total_costs(_live_costs(session, rec))),
        compaction_summary=session.compaction_summary if session else "",
    )


def _mode(session: AcpSession | None, rec: ConversationRecord | None) -> str:
    """The session's mode by the name the agent gives it, else the mode chosen from the chat."""
    if session is not None and session.current_mode:
        return session.mode_names.get(session.current_mode, session.current_mode)
    return ", ".join((rec.mode or "").splitlines()) if rec is not None else ""


def _live_costs(session: AcpSession | None, rec: ConversationRecord | None) -> dict[str, dict[str, object]]:
    """The stored costs, with the live session's latest report in place of its stored one."""
    costs: dict[str, dict[str, object]] = dict(rec.costs) if rec is not None else {}
    if session is not None and session.cost is not None and rec is not None and session.session_id == rec.session_id:
        costs[session.session_id] = {"amount": session.cost.amount, "currency": session.cost.currency}
    return costs


def _cwd_of(config: RelayConfig, rec: ConversationRecord | None) -> str:
    """The folder the conversation's agent works in, resolved as the runtime will resolve it."""
    known = config.agents or BUILTIN_AGENTS
    wanted = rec.agent if rec is not None and rec.agent in known else None  # removed: the default
    _, agent = choose_agent(config, wanted)
    cwd = rec.cwd if rec is not None and rec.cwd else agent.cwd
    return str(resolve_cwd(cwd))
