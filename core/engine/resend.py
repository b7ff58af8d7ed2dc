"""After a restart, a message whose turn had run a tool that may have changed something (an edit, a
command) is not sent to the agent again by itself: the person is asked, with the tools listed.

The question has two buttons (send it again, leave it) or, where the surface has none, takes the
numbered replies ``1`` and ``2``. Once it is asked, the message is settled in the journal (a second
restart does not ask twice; a button from before it answers "expired", like an approval's); sending
it again re-opens it, and its answer continues in the messages the person already sees.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from core.engine import wording
from core.engine.delivery import Outbox
from core.engine.journal import Journal, Unfinished
from core.engine.messages import Button, InboundMessage, PressResult
from core.engine.surface import Surface

__all__ = ["ResendQuestions", "parse_resend_reply"]

log = logging.getLogger("acp_relay.engine.resend")

_NUMBERED = re.compile(r"^\s*([12])\s*[.)]?\s*$")


def parse_resend_reply(text: str) -> bool | None:
    """``1``: send it again (True); ``2``: leave it (False); anything else: None."""
    match = _NUMBERED.match(text)
    return None if match is None else match.group(1) == "1"


@dataclass(eq=False)
class _Question:
    surface: Surface
    message: InboundMessage
    text: str
    tokens: dict[str, bool] = field(default_factory=dict)  # one-time token -> send it again?
    prompt_id: str | None = None


class ResendQuestions:
    """The open questions, by conversation (oldest first) and by button token."""

    def __init__(self, outbox: Outbox, journal: Journal,
                 resend: Callable[[Surface, InboundMessage], Awaitable[None]]) -> None:
        self.outbox = outbox
        self.journal = journal
        self._resend = resend  # queue the message again (as a replay: its answer may have begun)
        self._by_key: dict[str, list[_Question]] = {}
        self._by_token: dict[str, _Question] = {}

    def open_in(self, conversation_key: str) -> bool:
        """A question waits for an answer in this conversation."""
        return bool(self._by_key.get(conversation_key))

    async def ask(self, surface: Surface, item: Unfinished) -> None:
        """Ask whether to send ``item`` again; it is settled in the journal until the person says so."""
        msg = item.message
        question = _Question(surface, msg, wording.resend_question_text(item.tools))
        buttons: tuple[Button, ...] = ()
        if surface.capabilities_for(msg.conversation_key).can_buttons:
            again, leave = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
            question.tokens = {again: True, leave: False}
            buttons = (Button(wording.RESEND_LABEL, again, "primary"), Button(wording.LEAVE_LABEL, leave))
        text = question.text if buttons else f"{question.text}\n\n{wording.RESEND_NUMBERED_HINT}"
        question.prompt_id = await self.outbox.reply(surface, msg, text, buttons=buttons)
        if question.prompt_id is None:  # left unfinished: the next start asks again
            log.warning("could not ask whether to send a message in %s again", msg.conversation_key)
            return
        self.journal.complete(msg)
        self._by_key.setdefault(msg.conversation_key, []).append(question)
        for token in question.tokens:
            self._by_token[token] = question

    async def press(self, conversation_key: str, token: str) -> PressResult | None:
        """A button of a question; None when the token is not one of theirs."""
        question = self._by_token.get(token)
        if question is None or question.message.conversation_key != conversation_key:
            return None
        again = question.tokens[token]
        await self._decide(question, again)
        return PressResult("resolved", wording.RESENT if again else wording.LEFT_AS_IT_IS)

    async def answer(self, conversation_key: str, again: bool) -> bool:
        """A numbered reply decides the oldest open question; False when none is open."""
        waiting = self._by_key.get(conversation_key)
        if not waiting:
            return False
        await self._decide(waiting[0], again)
        return True

    async def _decide(self, question: _Question, again: bool) -> None:
        key = question.message.conversation_key
        waiting = self._by_key.get(key, [])
        if question in waiting:
            waiting.remove(question)
        if not waiting:
            self._by_key.pop(key, None)
        for token in question.tokens:
            self._by_token.pop(token, None)
        if question.prompt_id is not None:
            outcome = wording.RESENT if again else wording.LEFT_AS_IT_IS
            await self.outbox.edit(question.surface, key, question.prompt_id, f"{question.text}\n\n{outcome}")
        if again:
            self.journal.reopen(question.message)
            await self._resend(question.surface, question.message)
