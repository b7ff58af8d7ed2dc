"""Driving the agent from the chat: the project, the agent, the session and the mode of a conversation.

Each command lists its choices as a picker (a ``Choices`` block: buttons where the surface has them,
numbered replies where it has not) or, given a name, switches at once. What is chosen is stored with
the conversation, so it survives a restart. A choice that is not configured or offered, a stale
button, a session the agent does not know, a project folder that is gone: one sentence, nothing
changed. While an answer runs nothing is switched (the person is told so); lists are still shown.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from core.acp.client import AcpError, AcpToolGateUnroutable
from core.acp.session_handle import AcpRuntimeError
from core.acp.spec import resolve_cwd
from core.acp.switching import apply_mode, find_mode, mode_choices
from core.agents import BUILTIN_AGENTS, choose_agent
from core.config import RelayConfig
from core.describing import describe
from core.engine import switch_wording as say
from core.engine.blocks import Choices, ErrorProse
from core.engine.conversation import Conversation
from core.engine.delivery import Outbox
from core.engine.messages import Button, ChoiceList, InboundMessage, PressResult
from core.engine.picks import PAGE, Pick, Picks
from core.engine.streamer import Content
from core.failures import is_session_lost
from core.store import ConversationRecord

__all__ = ["LEAVE_PROJECT", "SWITCH_ACTIONS", "Answer", "Switches", "with_choice"]

log = logging.getLogger("acp_relay.engine.switches")

#: The actions this module carries out.
SWITCH_ACTIONS = frozenset({"sessions", "project", "agent", "mode"})
#: ``/project none``: leave the project (a configured project cannot take this name).
LEAVE_PROJECT = "none"

#: Answers a command's message (None: the dashboard's panel) with content and buttons; the message id.
Answer = Callable[[Conversation, InboundMessage | None, Content, tuple[Button, ...]], Awaitable[str | None]]


class Switches:
    """The sessions, project, agent and mode commands, their buttons and their numbered replies."""

    def __init__(self, config: RelayConfig, picks: Picks, outbox: Outbox, answer: Answer) -> None:
        self.config = config
        self.picks = picks
        self.outbox = outbox
        self.answer = answer

    # -- commands --------------------------------------------------------------------------

    async def run(self, conv: Conversation, action: str, argument: str, message: InboundMessage | None) -> None:
        """Carry out one of ``SWITCH_ACTIONS``: list the choices, or switch to the one named."""
        try:
            if argument:
                text = await self.choose(conv, action, argument)
                await self.answer(conv, message, text, ())
                return
            await self._list(conv, action, message, "")
        except (AcpError, AcpRuntimeError) as exc:
            described = describe(exc)
            await self.answer(conv, message, (ErrorProse(described.prose, described.reset),), ())

    async def choose(self, conv: Conversation, action: str, value: str, label: str = "") -> str:
        """Switch to ``value`` (a name, a session id, a mode; ``label``: its button's words, which for a
        session are its title and age); the sentence saying what happened."""
        if conv.busy or conv.queue:
            return say.BUSY_SWITCH
        if action == "project":
            return await self._project(conv, value)
        if action == "agent":
            return await self._agent(conv, value)
        if action == "sessions":
            return await self._attach(conv, value, label)
        return await self._mode(conv, value)

    # -- presses and numbered replies ------------------------------------------------------

    async def press(self, conv: Conversation, token: str) -> PressResult | None:
        """A press on a picker's button (None: not one of this conversation's open pickers). While an
        answer runs the list stays open: nothing is switched, and its buttons still work afterwards."""
        if (conv.busy or conv.queue) and self.picks.holds(conv.key, token):
            return PressResult("resolved", say.BUSY_SWITCH)
        taken = self.picks.take(conv.key, token)
        if taken is None:
            return None
        text = await self._taken(conv, *taken)
        return PressResult("resolved", text)

    async def numbered(self, conv: Conversation, message: InboundMessage) -> bool:
        """A number replying to the open picker (surfaces without buttons): chosen, and answered."""
        taken = self.picks.take_number(conv.key, message.text)
        if taken is None:
            return False
        text = await self._taken(conv, *taken, message=message)
        if taken[1] is not None:  # (the next page is its own answer)
            await self.answer(conv, message, text, ())
        return True

    async def _taken(self, conv: Conversation, pick: Pick, value: str | None, *,
                     message: InboundMessage | None = None) -> str:
        try:
            if value is None:  # "more": the next page of sessions, in place of a list with buttons
                await self._list(conv, pick.kind, message, pick.more or "", edit="" if message else pick.message_id)
                return say.MORE_LABEL
            text = await self.choose(conv, pick.kind, value, pick.label)
        except (AcpError, AcpRuntimeError) as exc:
            return describe(exc).prose
        if pick.message_id and message is None:  # a press: the list's message now says what was chosen
            await self.outbox.edit(conv.surface, conv.key, pick.message_id, text)
        return text

    # -- lists -----------------------------------------------------------------------------

    async def _list(self, conv: Conversation, kind: str, message: InboundMessage | None, page: str, *,
                    edit: str = "") -> None:
        found = await self.listing(conv, kind, page)
        if not found.options:
            await self.answer(conv, message, found.prompt, ())
            return
        await self._show(conv, message, kind, found, edit)

    async def listing(self, conv: Conversation, kind: str, page: str = "") -> ChoiceList:
        """What can be chosen for ``kind`` (a dashboard panel shows it as it likes); without options,
        ``prompt`` is the sentence saying why (no projects, no session list...)."""
        rec = conv.binding.record()
        if kind == "project":
            if not self.config.projects:
                return ChoiceList(say.NO_PROJECTS)
            names = list(self.config.projects)
            back = ((say.NO_PROJECT, LEAVE_PROJECT),) if rec.project else ()
            return ChoiceList(say.projects_text(rec.project, str(resolve_cwd(conv.binding.spec(rec).cwd))),
                              tuple((n, n) for n in names) + back,
                              names.index(rec.project) if rec.project in names else -1)
        if kind == "agent":
            known = list(self.config.agents or BUILTIN_AGENTS)
            name = choose_agent(self.config, rec.agent if rec.agent in known else None)[0]
            return ChoiceList(say.agents_text(name), tuple((n, n) for n in known),
                              known.index(name) if name in known else -1)
        if kind == "sessions":
            return await self._sessions(conv, rec.session_id, page)
        session = conv.session or await conv.binding.ensure([])
        found = mode_choices(session)
        if not found:
            return ChoiceList(say.NO_MODES)
        current = next((i for i, c in enumerate(found) if c.current), -1)
        return ChoiceList(say.modes_text(found[current].label if current >= 0 else ""),
                          tuple((c.label, c.value) for c in found), current)

    async def _sessions(self, conv: Conversation, attached: str | None, page: str) -> ChoiceList:
        """A page of the agent's sessions in the conversation's folder (``page``: "offset|cursor")."""
        runtime = await conv.binding.runtime()
        if not runtime.list_supported:
            return ChoiceList(say.NO_LIST)
        offset_text, _, cursor = page.partition("|")
        offset = int(offset_text) if offset_text.isdigit() else 0
        listed, next_cursor = await runtime.list_sessions(cursor or None)
        listed = [s for s in listed if s.session_id != conv.binding.opened_ahead]  # empty: nothing to continue
        if not listed[offset:]:
            return ChoiceList(say.no_sessions_text(runtime.cwd))
        shown = listed[offset:offset + PAGE]
        now = time.time()
        options = tuple((_session_label(s.title, s.session_id, say.age_text(now - s.updated if s.updated else None)),
                         s.session_id) for s in shown)
        more = f"{offset + PAGE}|{cursor}" if offset + PAGE < len(listed) else f"0|{next_cursor}" if next_cursor \
            else None
        current = next((i for i, s in enumerate(shown) if s.session_id == attached), -1)
        return ChoiceList(say.sessions_text(runtime.cwd), options, current, more)

    async def _show(self, conv: Conversation, message: InboundMessage | None, kind: str, found: ChoiceList,
                    edit: str) -> None:
        buttons_ok = conv.surface.capabilities_for(conv.key).can_buttons
        more = found.more
        pick, buttons = self.picks.offer(conv.key, kind, found.options, more=more, more_label=say.MORE_LABEL,
                                         numbered=not buttons_ok)
        labels = tuple(label for label, _ in found.options) + ((say.MORE_LABEL,) if more and not buttons_ok else ())
        block = Choices(found.prompt, labels, numbered=not buttons_ok, current=found.current, more=more is not None)
        shown = buttons if buttons_ok else ()
        if edit:
            await self.outbox.edit(conv.surface, conv.key, edit, (block,), shown)
            pick.message_id = edit
            return
        pick.message_id = await self.answer(conv, message, (block,), shown) or ""

    # -- switching -------------------------------------------------------------------------

    async def _project(self, conv: Conversation, name: str) -> str:
        if name == LEAVE_PROJECT:
            return await self._leave_project(conv)
        project = self.config.projects.get(name)
        if project is None:
            return say.unknown_name_text("project", name, list(self.config.projects))
        folder = resolve_cwd(project.folder)
        if not folder.is_dir():
            return say.project_folder_missing_text(name, str(folder))
        rec = conv.binding.record()
        if rec.project == name:
            return say.already_text("project", name)
        agent = project.agent or rec.agent
        changed = agent != rec.agent and bool(project.agent)
        await self._switch(conv, replace(rec, project=name, cwd=project.folder, agent=agent,
                                         model=None if changed else rec.model, mode=None if changed else rec.mode))
        return say.project_switched_text(name, str(folder))

    async def _leave_project(self, conv: Conversation) -> str:
        """Back to the agent's own folder; the agent the project chose stays."""
        rec = conv.binding.record()
        if not rec.project:
            return say.NO_PROJECT_IN_USE
        left = replace(rec, project="", cwd="")
        await self._switch(conv, left)
        return say.project_left_text(rec.project, str(resolve_cwd(conv.binding.spec(left).cwd)))

    async def _agent(self, conv: Conversation, name: str) -> str:
        known = self.config.agents or BUILTIN_AGENTS
        if name not in known:
            return say.unknown_name_text("agent", name, list(known))
        rec = conv.binding.record()
        if choose_agent(self.config, rec.agent if rec.agent in known else None)[0] == name and rec.agent:
            return say.already_text("agent", name)
        # A project keeps its folder; otherwise the new agent works in its own.
        await self._switch(conv, replace(rec, agent=name, cwd=rec.cwd if rec.project else "", model=None, mode=None))
        return say.agent_switched_text(name)

    async def _switch(self, conv: Conversation, rec: ConversationRecord) -> None:
        conv.deps.approvals.forget_session(conv.key)  # "allow for this session" was for that session
        self.picks.forget(conv.key)
        await conv.binding.switch(rec)
        conv.open_ahead()  # the agent (and folder) switched to starts while the person reads the answer

    async def _attach(self, conv: Conversation, session_id: str, label: str) -> str:
        rec = conv.binding.record()
        if session_id == rec.session_id and conv.session is not None:
            return say.already_text("session", session_id)
        try:
            session, replayed = await conv.binding.attach(session_id)
        except AcpError as exc:
            if is_session_lost(exc) or exc.rpc_code in (-32602, -32002):
                return say.unknown_session_text(session_id)
            raise
        conv.deps.approvals.forget_session(conv.key)
        await conv.follow_commands(session)
        title, _, age = label.partition(_AGE)
        if title and not session.title and title != session_id[:12] and not title.endswith("…"):
            session.title = title  # the list's title, until the agent says another
            conv.binding.save_context()
        return say.attached_text(session.title, age, replayed)

    async def _mode(self, conv: Conversation, wanted: str) -> str:
        session = conv.session or await conv.binding.ensure([])
        named = find_mode(session, wanted)
        try:
            choice = await apply_mode(session, wanted)
        except LookupError:
            return say.unknown_name_text("mode", wanted, [c.label for c in mode_choices(session)])
        except AcpToolGateUnroutable:
            return say.mode_refused_text(named.label if named else wanted, session.runtime.spec.tool_gate)
        rec = conv.binding.record()
        conv.binding.store.save_conversation(replace(rec, mode=with_choice(rec.mode, choice.value)))
        return say.mode_switched_text(choice.label)


def with_choice(stored: str | None, value: str) -> str:
    """The stored mode choices (one a line: a mode id, or ``configId=value``) with ``value`` in place of
    the earlier choice of the same mode or option."""
    key = value.partition("=")[0] if "=" in value else ""
    kept = [c for c in (stored or "").splitlines() if c and (c.partition("=")[0] if "=" in c else "") != key]
    return "\n".join([*kept, value])


_AGE = " · "


#: A session's title on its button is cut here, so the age still fits (Slack shows 75 characters).
_TITLE_ON_BUTTON = 48


def _session_label(title: str, session_id: str, age: str) -> str:
    """A session's button: its title (else the start of its id), and how long ago it was used."""
    name = title if len(title) <= _TITLE_ON_BUTTON else title[:_TITLE_ON_BUTTON - 1] + "…"
    name = name or session_id[:12]
    return f"{name}{_AGE}{age}" if age else name
