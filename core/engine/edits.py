"""A person edited, or deleted, a message of theirs that the relay took in.

An agent reads a message once. So an edit of a message still waiting for its turn replaces its words
(in the journal too: a restart sends the new ones), and an edit of one the agent has read (its turn
runs, or ran) is answered with a sentence saying the edit was not sent: the person is never left
believing the agent saw it. A message deleted while it waits is taken out of the line (its receipt
says so); one deleted after the agent read it is said to be still part of the conversation. Either
way what it said is no longer kept in the journal. An edit that changes no words (a link preview
added, a pin) does nothing. (An edit of a message the relay never took in is that message, late:
surfaces hand over only edits of messages for the bot as they read now, a mention added, say; the
engine takes it as a message.)
Each change is journaled, so one delivered again is not answered twice; relays sharing a store
journal it for the conversation's owner to take, as a message.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable

from core.engine import edit_wording
from core.engine.conversation import Conversation
from core.engine.delivery import Outbox
from core.engine.journal import Journal
from core.engine.messages import InboundMessage
from core.engine.receipts import Receipts
from core.engine.router import route
from core.engine.surface import Surface

__all__ = ["Edits"]

log = logging.getLogger("acp_relay.engine.edits")

Job = Callable[[], Awaitable[None]]


class Edits:
    """Takes the person's edits and deletions of their own messages (``InboundMessage.edits``)."""

    def __init__(self, journal: Journal, outbox: Outbox, receipts: Receipts,
                 conversation: Callable[[str, Surface], Conversation]) -> None:
        self._journal = journal
        self._outbox = outbox
        self._receipts = receipts
        self._conversation = conversation

    def journal(self, edit: InboundMessage, taken: InboundMessage | None, *, here: bool) -> InboundMessage | None:
        """Journal ``edit`` of ``taken`` (the message as journaled), in the conversation that message was
        taken in (a surface may not know it, as a Discord mention answered in the thread it opened) and as
        its person's (a deletion may not say who); None when there is nothing to do: no new words (a link
        preview, a pin), a message never taken in, or the same change again. ``here``: handled at once by
        this relay (else journaled unfinished, for the conversation's owner to take)."""
        if taken is None:  # never taken in: a deletion of a message not the bot's
            log.debug("a change to a message %s/%s the relay never took in", edit.surface, edit.edits)
            return None
        if not edit.deleted and edit.text.strip() == taken.text.strip():
            return None
        edit = dataclasses.replace(edit, conversation_key=taken.conversation_key, user_id=taken.user_id)
        if not self._journal.record_edit(edit, handled=here):
            log.info("ignoring a redelivered change %s/%s", edit.surface, edit.message_id)
            return None
        return edit

    def accept(self, surface: Surface, edit: InboundMessage, taken: InboundMessage | None, *,
               running: bool) -> Job | None:
        """A relay alone on its store: journal ``edit``; the rest of its handling, to run in its
        conversation's lane after the message it changes (None: nothing more to do). Before the engine
        runs, the journal alone changes: the start answers what waits from there."""
        journaled = self.journal(edit, taken, here=True)
        if journaled is None:
            return None
        if not running:
            if journaled.deleted:
                self._journal.forget(_edited(journaled))
            else:
                self._journal.rewrite(_edited(journaled))  # (a message answered already is left as it was)
            return None

        async def take() -> None:
            await self.take(self._conversation(journaled.conversation_key, surface), journaled)

        return take

    async def take(self, conv: Conversation, edit: InboundMessage) -> None:
        """Change the message ``edit`` changes where it still waits in ``conv``; else say what became of it."""
        edited = _edited(edit)
        key = (edited.surface, edited.message_id)
        at = next((i for i, item in enumerate(conv.queue) if (item.message.surface, item.message.message_id) == key),
                  None)
        if edit.deleted:
            if at is not None:
                item = conv.queue[at]
                del conv.queue[at]
                self._receipts.settle(conv.surface, conv.key, item.message, "deleted")
                log.info("a message waiting in %s was deleted: it is not answered", conv.key)
            else:
                await self._outbox.say(conv.surface, conv.key, edit_wording.DELETED_AFTER_READ)
            self._journal.forget(edited)
            return
        commands = conv.surface.commands, conv.surface.bot_usernames
        if at is not None and not conv.queue[at].compact and route(edited.text, *commands) is None:
            item = conv.queue[at]
            message = dataclasses.replace(item.message, text=edited.text)
            if self._journal.rewrite(message):
                conv.queue[at] = dataclasses.replace(item, message=message)
                log.info("a message waiting in %s was edited: the agent gets its new words", conv.key)
                return
        taken = self._journal.taken(edited.surface, edited.message_id)
        if taken is not None and route(taken.text, *commands) is not None:  # the relay's, never the agent's
            await self._outbox.reply(conv.surface, edited, edit_wording.COMMAND_EDITED)
            return
        await self._outbox.reply(conv.surface, edited, edit_wording.edit_not_sent_text(edited.text))


def _edited(edit: InboundMessage) -> InboundMessage:
    """The changed message, with its new words, under its own id."""
    assert edit.edits is not None
    return dataclasses.replace(edit, message_id=edit.edits, edits=None, deleted=False)
