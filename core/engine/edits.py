"""A person edited a message of theirs that the relay took in.

An agent reads a message once. So an edit of a message still waiting for its turn replaces its words
(in the journal too: a restart sends the new ones), and an edit of one the agent has read (its turn
runs, or ran) is answered with a sentence saying the edit was not sent: the person is never left
believing the agent saw it. An edit that changes no words (a link preview added, a pin) and an edit
of a message the relay never took in (one not for the bot) change nothing. Each edit is journaled,
so an edit delivered again is not answered twice.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable

from core.engine import wording
from core.engine.conversation import Conversation
from core.engine.delivery import Outbox
from core.engine.journal import Journal
from core.engine.messages import InboundMessage
from core.engine.router import route
from core.engine.surface import Surface

__all__ = ["Edits"]

log = logging.getLogger("acp_relay.engine.edits")

Job = Callable[[], Awaitable[None]]


class Edits:
    """Takes the person's edits of their own messages (``InboundMessage.edits``)."""

    def __init__(self, journal: Journal, outbox: Outbox, conversation: Callable[[str, Surface], Conversation]) -> None:
        self._journal = journal
        self._outbox = outbox
        self._conversation = conversation

    def accept(self, surface: Surface, edit: InboundMessage, *, running: bool) -> Job | None:
        """Journal ``edit``; the rest of its handling, to run in its conversation's lane after the message
        it edits (None: nothing more to do). Before the engine runs, a message waiting is rewritten in
        the journal alone: the start answers it from there."""
        assert edit.edits is not None
        taken = self._journal.taken(edit.surface, edit.edits)
        if taken is None:  # never taken in (not for the bot, or long forgotten)
            log.debug("an edit of a message %s/%s the relay never took in", edit.surface, edit.edits)
            return None
        if edit.text.strip() == taken.text.strip():  # no new words: a link preview, a pin
            return None
        if not self._journal.record_edit(edit):
            log.info("ignoring a redelivered edit %s/%s", edit.surface, edit.message_id)
            return None
        # In the conversation the message was taken in (a surface may not know it: a Discord mention
        # answered in the thread it opened).
        edited = dataclasses.replace(edit, message_id=edit.edits, edits=None, conversation_key=taken.conversation_key)
        if not running:
            self._journal.rewrite(edited)  # (a message answered already is left as it was)
            return None

        async def take() -> None:
            await self._take(self._conversation(edited.conversation_key, surface), edited)

        return take

    async def _take(self, conv: Conversation, edited: InboundMessage) -> None:
        """``edited``: the message with its new words, under its own id."""
        key = (edited.surface, edited.message_id)
        at = next((i for i, item in enumerate(conv.queue) if (item.message.surface, item.message.message_id) == key),
                  None)
        if at is not None and not conv.queue[at].compact \
                and route(edited.text, conv.surface.commands, conv.surface.bot_usernames) is None:
            item = conv.queue[at]
            message = dataclasses.replace(item.message, text=edited.text)
            if self._journal.rewrite(message):
                conv.queue[at] = dataclasses.replace(item, message=message)
                log.info("a message waiting in %s was edited: the agent gets its new words", conv.key)
                return
        await self._outbox.reply(conv.surface, edited, wording.edit_not_sent_text(edited.text))
