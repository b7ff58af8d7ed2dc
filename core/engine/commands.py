"""The actions a person can take on a conversation, whatever their surface calls them.

A command's answer goes back to the message that asked (``Surface.reply``: a Discord or Slack
interaction, a reply in the chat); status and help may be private. The dashboard's buttons and
panel call the same actions without a message to answer.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from core.acp.client import AcpError
from core.acp.session import AcpSession
from core.acp.session_handle import AcpRuntimeError
from core.acp.types import Notice
from core.config import RelayConfig
from core.describing import describe
from core.engine import twoway_wording as tw
from core.engine import wording
from core.engine.blocks import ErrorProse
from core.engine.choices import ModelChoices, Offer
from core.engine.conversation import Conversation
from core.engine.delivery import Outbox
from core.engine.messages import Button, ConversationStatus, InboundMessage, PressResult
from core.engine.picks import Picks
from core.engine.router import Command
from core.engine.status import conversation_status
from core.engine.streamer import Content
from core.engine.switches import SWITCH_ACTIONS, Switches
from core.store import Store

__all__ = ["Control"]

log = logging.getLogger("acp_relay.engine.commands")

#: Answers only the asker needs to see.
_PRIVATE = frozenset({"status", "help"})


class Control:
    """Stop, reset, status, help and model for one conversation at a time."""

    def __init__(self, config: RelayConfig, store: Store, outbox: Outbox, choices: ModelChoices,
                 picks: Picks, *, owner_of: Callable[[str], str | None] | None = None) -> None:
        self.config = config
        self.store = store
        self.outbox = outbox
        self.choices = choices
        self.switches = Switches(config, picks, outbox, self._answer_with)
        #: Relays sharing a store: which relay owns a conversation (the status names it).
        self.owner_of = owner_of

    async def run(self, conv: Conversation, command: Command, message: InboundMessage | None) -> None:
        """Carry out ``command``; ``message`` is what asked for it (None: the dashboard's controls)."""
        action = command.action
        if action == "stop":
            await self.stop(conv, message)
        elif action == "reset":
            await conv.stop()
            await conv.binding.close()  # the agent may free the session (session/close)
            conv.reset()
            await self._answer(conv, message, wording.NEW_CONVERSATION)
            conv.open_ahead()
        elif action == "status":
            await self._answer(conv, message, wording.status_text(self.status(conv.key, conv)), private=True)
        elif action == "help":
            commands = conv.session.commands if conv.session is not None else ()
            await self._answer(conv, message, wording.help_text(conv.surface.commands, commands), private=True)
        elif action == "model":
            await self._model(conv, command.argument, message)
        elif action in SWITCH_ACTIONS:
            await self.switches.run(conv, action, command.argument, message)

    async def stop(self, conv: Conversation, message: InboundMessage | None) -> None:
        """Drop what waits in the queue, then end the running turn (its own reply says "Stopped." once
        it has really ended); says how many queued messages were dropped."""
        dropped = conv.drop_queue()  # first: once the turn ends, the next one would start
        outcome = await conv.stop()
        said = [tw.queue_dropped_text(dropped)] if dropped else []
        if outcome == "idle" and not dropped:
            said.append(wording.NOTHING_TO_STOP)
        elif outcome == "unconfirmed":
            said.insert(0, wording.STOP_UNCONFIRMED)
        if said:
            await self._answer(conv, message, " ".join(said))

    def status(self, key: str, conv: Conversation | None) -> ConversationStatus:
        """Where the conversation stands (never starts an agent)."""
        status = conversation_status(self.config, self.store.get_conversation(key), conv)
        return status if self.owner_of is None else dataclasses.replace(status, relay=self.owner_of(key))

    async def session_for(self, conv: Conversation) -> AcpSession:
        """The conversation's session outside a turn; its notices (a new session...) are said at once."""
        notices: list[Notice] = []
        session = await conv.binding.ensure(notices)
        for notice in notices:
            await self.outbox.say(conv.surface, conv.key, notice.text)
        return session

    async def set_model(self, conv: Conversation, model: str) -> None:
        """Switch the model (the first message need not have been sent yet); the choice is stored."""
        session = await self.session_for(conv)
        await session.set_model(model)
        chosen = session.current_model or model  # the id, also when the person gave the model's name
        self.store.save_conversation(dataclasses.replace(conv.binding.record(), model=chosen))  # keeps session_meta

    async def choose_model(self, conv: Conversation, token: str) -> PressResult | None:
        """A press on a model list's button: switch, and show the choice in the list's message."""
        taken = self.choices.take(conv.key, token)
        if taken is None:
            return None
        offer, model = taken
        try:
            await self.set_model(conv, model)
        except (AcpError, AcpRuntimeError) as exc:
            return PressResult("resolved", describe(exc).prose)
        session = conv.session
        text = wording.model_switched_text((session.model_label(model) if session else None) or model)
        if offer.message_id:
            await self.outbox.edit(conv.surface, conv.key, offer.message_id, text)
        return PressResult("resolved", text)

    async def _model(self, conv: Conversation, name: str, message: InboundMessage | None) -> None:
        offer: Offer | None = None
        buttons: tuple[Button, ...] = ()
        try:
            if name:
                await self.set_model(conv, name)
                shown = conv.session.model_label(conv.session.current_model) if conv.session else None
                text = wording.model_switched_text(shown or name)
            else:
                session = await self.session_for(conv)
                names = tuple(session.model_label(m) or m for m in session.models)  # the agent's names
                text = wording.models_text(session.model_label(session.current_model), names)
                if session.models and conv.surface.capabilities_for(conv.key).can_buttons:
                    offer, buttons = self.choices.offer(conv.key, session.models, session.model_names)
        except (AcpError, AcpRuntimeError) as exc:
            described = describe(exc)
            failed: Content = (ErrorProse(described.prose, described.reset),)
            mid = await self._answer(conv, message, failed)
        else:
            mid = await self._answer(conv, message, text, buttons=buttons)
        if offer is not None and mid:
            offer.message_id = mid

    async def _answer_with(self, conv: Conversation, message: InboundMessage | None, text: Content,
                           buttons: tuple[Button, ...]) -> str | None:
        return await self._answer(conv, message, text, buttons=buttons)

    async def _answer(self, conv: Conversation, message: InboundMessage | None, text: Content, *,
                      private: bool = False, buttons: tuple[Button, ...] = ()) -> str | None:
        if message is None:
            return await self.outbox.say(conv.surface, conv.key, text, buttons=buttons)
        return await self.outbox.reply(conv.surface, message, text, private=private, buttons=buttons)
