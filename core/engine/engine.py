"""The engine: the one core every surface plugs into (it implements ``Inbound``).

It wires the parts (journal, access, router, conversations, turns, approvals, delivery) and owns
the lifecycle. No message is dispatched before ``start`` has replayed what a killed relay left
unfinished, none twice, and none once ``close`` has begun: until then (and from then on) an
accepted message is only journaled, and answered after the (next) start.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection
from typing import Literal

from core.acp.pool import RuntimePool
from core.config import RelayConfig, secret_values
from core.engine import presses, wording
from core.engine import twoway_wording as tw
from core.engine.access import AccessControl
from core.engine.approval_prompt import ApprovalPrompts
from core.engine.approvals import Approvals
from core.engine.batched import Batched
from core.engine.chat_reply import ChatReplies
from core.engine.choices import ModelChoices
from core.engine.commands import Control
from core.engine.conversation import Conversation, ConversationDeps
from core.engine.delivery import Outbox
from core.engine.edits import Edits
from core.engine.form_prompt import FormPrompts
from core.engine.form_state import Forms
from core.engine.journal import Journal
from core.engine.messages import (
    ButtonPress,
    ChoiceList,
    ConversationStatus,
    InboundMessage,
    PressResult,
    QueueItem,
)
from core.engine.owner_calls import CALL, DONE, OwnerCalls
from core.engine.ownership import Ownership, default_relay_name
from core.engine.picks import Picks
from core.engine.pickups import Pickups
from core.engine.receipts import Receipts
from core.engine.reply import Replies
from core.engine.resend import ResendQuestions, parse_resend_reply
from core.engine.router import IGNORED, Command, agent_command, parse_approval_reply, route
from core.engine.steering import Steering
from core.engine.surface import Surface
from core.engine.switches import SWITCH_ACTIONS
from core.engine.tasks import TaskSet
from core.engine.turn import TurnDeps, TurnRunner
from core.redact import register_secrets
from core.retry import RetryPolicy
from core.store import Store

__all__ = ["ConversationStatus", "Engine"]

log = logging.getLogger("acp_relay.engine")

#: Idle conversations kept in memory (the rest live in the store and come back on their next message).
CONVERSATIONS_IN_MEMORY = 1000

State = Literal["new", "starting", "running", "closing", "closed"]


class Engine(Pickups):
    """De-duplicates, checks access, routes commands, queues prompts and runs turns."""

    def __init__(self, config: RelayConfig, store: Store, pool: RuntimePool, *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, cancel_wait_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic,
                 conversations_in_memory: int = CONVERSATIONS_IN_MEMORY, replies: Replies | None = None) -> None:
        """``replies`` shows each turn to the person: by default a chat's reply on the conversation's
        surface (``acp-relay ask`` passes the terminal's)."""
        self.config = config
        # Every secret the config names is replaced by value in all the engine sends (and in the logs)
        # from now until close(); built at run start, before any surface launches and logs.
        self._secrets = register_secrets(secret_values(config))
        self.store = store
        self.pool = pool
        self.tasks = TaskSet()
        self.surfaces: dict[str, Surface] = {}
        self.access = AccessControl()
        self.approvals = Approvals()
        #: Relays sharing a PostgreSQL store: the conversations this one owns (None: it is alone).
        self.ownership: Ownership | None = None
        if store.backend.kind != "sqlite":
            self.ownership = Ownership(store, config.store.relay_name or default_relay_name(), config.store.lease_s,
                                       pickup=self._spawn_pickup, on_lost=self._disown, serves=self._serves)
        #: A store of its own: the writes of a burst (new sessions, answers' messages) made in one round of
        #: the loop, in one transaction. Shared, each write is fenced by its conversation's lease instead.
        batched = Batched(store) if self.ownership is None else None
        self.journal = Journal(store, self.ownership.fenced if self.ownership is not None else None,
                               self.ownership.deferred if self.ownership is not None else None, batched)
        #: Relays sharing a store: what another relay asks of the owner here, and this relay of owners.
        self.calls: OwnerCalls | None = None
        if self.ownership is not None:
            ownership = self.ownership
            self.calls = OwnerCalls(store, ownership.relay, owns=lambda key: ownership.lease(key) is not None)
            self.calls.handlers[presses.KIND] = presses.handler(self._press_here)
            ownership.handlers = {CALL: self.calls.on_note, DONE: self.calls.on_note}
            ownership.on_beat = lambda: self.outbox.schedule_redelivery()  # a dead relay's kept answers too
        self._pickups: dict[str, asyncio.Lock] = {}
        #: Messages of an owned conversation already handed to it in this tenure (a pickup skips them).
        self._taken: dict[str, set[tuple[str, str]]] = {}
        self.choices = ModelChoices()
        self.outbox = Outbox(store, self.tasks, self.surfaces, default_interval_s=config.engine.edit_interval_s,
                             sleep=sleep, clock=clock)
        if self.ownership is not None:
            self.outbox.owns = self.ownership.answers
            self.outbox.fenced = self.ownership.fenced
            self.outbox.fence = self.ownership.guard
        self.prompts = ApprovalPrompts(self.approvals, self.outbox, self.tasks, cancel_wait_s=cancel_wait_s,
                                       closing=lambda: self.state in ("closing", "closed"))
        self.forms = Forms()
        self.form_prompts = FormPrompts(self.forms, self.outbox, self.tasks, cancel_wait_s=cancel_wait_s,
                                        closing=lambda: self.state in ("closing", "closed"))
        self.picks = Picks()
        self.control = Control(config, store, self.outbox, self.choices, self.picks,
                               owner_of=self.ownership.holder if self.ownership is not None else None)
        self.receipts = Receipts(self.outbox, self.tasks)
        self.steering = Steering(self.outbox, self.journal, self.receipts)
        self.resends = ResendQuestions(self.outbox, self.journal, self._send_again)
        self.edits = Edits(self.journal, self.outbox, self.receipts, self.conversation)
        policy = RetryPolicy(config.retry.attempts, config.retry.budget_s, config.retry.base_delay_s)
        replies = replies or ChatReplies(self.outbox, self.journal, self.prompts, sleep=sleep,
                                         max_answer_bytes=config.engine.max_answer_bytes, forms=self.form_prompts)
        runner = TurnRunner(TurnDeps(config.timeouts, policy, sleep, cancel_wait_s, self.journal, self.approvals,
                                     replies))
        self._deps = ConversationDeps(config, store, self.journal, pool, self.tasks, runner, self.approvals,
                                      self.choices, cancel_wait_s, self.receipts, self.picks,
                                      batched)
        self.conversations: OrderedDict[str, Conversation] = OrderedDict()
        self.conversations_in_memory = conversations_in_memory
        self.state: State = "new"

    # -- wiring ----------------------------------------------------------------------------

    def attach(self, surface: Surface, allowed_user_ids: Collection[str | int]) -> None:
        """Serve ``surface``; only ``allowed_user_ids`` may talk to the agent through it."""
        self.surfaces[surface.name] = surface
        self.access.allow(surface.name, allowed_user_ids)

    @property
    def runner(self) -> TurnRunner:
        """What runs every conversation's turns (a benchmark may put its own in, before any message)."""
        return self._deps.turns

    @runner.setter
    def runner(self, runner: TurnRunner) -> None:
        self._deps.turns = runner

    def conversation(self, key: str, surface: Surface) -> Conversation:
        """The conversation under ``key``: in memory, or brought back from the store on first use."""
        conv = self.conversations.get(key)
        if conv is None:
            self._forget_idle()
            conv = self.conversations[key] = Conversation(key, surface, self._deps)
        else:
            self.conversations.move_to_end(key)
        return conv

    def _forget_idle(self) -> None:
        """Make room for one more: keep at most ``conversations_in_memory`` (busy ones stay), the least
        recently used go first (they come back from the store on their next message)."""
        excess = len(self.conversations) + 1 - self.conversations_in_memory
        if excess <= 0:
            return
        for key in list(itertools.islice(self.conversations, excess)):
            if self.conversations[key].idle:
                del self.conversations[key]
                if self.ownership is not None:  # its next message's relay takes it
                    self._taken.pop(key, None)
                    self.ownership.release(key)

    async def _send_again(self, surface: Surface, msg: InboundMessage) -> None:
        await self._dispatch(self.conversation(msg.conversation_key, surface), msg, replay=True)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Replay what was received and never finished (a killed relay's, or what arrived before
        this start), then resend undelivered answers. Messages arriving meanwhile wait their turn."""
        self.state = "starting"
        self.journal.prune()
        if self.ownership is not None:  # the sweep takes the conversations left unanswered, as it goes
            self.state = "running"
            self.tasks.spawn(self.ownership.run(), name="ownership")
            self.outbox.schedule_redelivery()
            return
        done: set[tuple[str, str]] = set()
        while fresh := [u for u in self.journal.unfinished() if (u.message.surface, u.message.message_id) not in done]:
            for item in fresh:
                msg = item.message
                done.add((msg.surface, msg.message_id))
                surface = self.surfaces.get(msg.surface)
                if surface is None:
                    continue  # a surface this relay does not run: its messages wait for one that does
                if item.tool_may_have_run:  # sending it again could run a tool twice: ask the person
                    self.conversation(msg.conversation_key, surface).open_ahead()  # while the person decides
                    await self.resends.ask(surface, item)
                    continue
                log.info("answering an unfinished message in %s", msg.conversation_key)
                await self._dispatch(self.conversation(msg.conversation_key, surface), msg, replay=True)
        self.state = "running"  # no await since the last look at the journal: nothing slipped past
        self.outbox.schedule_redelivery()

    async def close(self) -> None:
        """Cancel running turns (their messages stay unfinished, so a restart resumes them)."""
        self.state = "closing"
        await self.tasks.close()
        if self.ownership is not None:  # the others take over at once (what is unfinished stays journaled)
            self.ownership.release_all()
        self.state = "closed"
        self._secrets.release()

    @property
    def closing(self) -> bool:
        """Shutting down (or shut down): new messages are journaled only."""
        return self.state in ("closing", "closed")

    # -- inbound ---------------------------------------------------------------------------

    async def handle_message(self, message: InboundMessage) -> None:
        """A person wrote: de-duplicate, check access, then a command or a queued prompt."""
        then = self.accept(message)
        if then is not None:
            await then()

    def accept(self, message: InboundMessage) -> Callable[[], Awaitable[None]] | None:
        """The first half of ``handle_message``, without waiting: once this returns, ``message`` is
        journaled (or refused, or known as a redelivery), so a surface may confirm it to its platform.

        Returns the rest of its handling (its dispatch, or the refusal to send), for the surface to
        await in arrival order per conversation; None when nothing more is to be done. A dispatch
        that finds the engine closing leaves the message journaled, answered after the next start.
        """
        surface = self.surfaces.get(message.surface)
        if surface is None:
            log.warning("message from a surface that is not attached: %s", message.surface)
            return None
        # (Who deleted a message may be unknown; a deletion changes only a message that was taken in.)
        if not message.deleted and not self.access.permits(message.surface, message.user_id):
            if message.edits is not None or not self.access.first_refusal(message.surface, message.user_id):
                return None
            text = wording.unauthorised_text(message.user_id)

            async def refuse() -> None:
                await self.outbox.reply(surface, message, text, private=True)

            return refuse
        if message.edits is not None:
            taken = self.journal.taken(message.surface, message.edits)
            if taken is None and not message.deleted:
                # Never taken in, and for the bot as it reads now (a surface hands over only such edits): a
                # mention added after sending. The message itself, late, as it reads now, with its files.
                message = dataclasses.replace(message, message_id=message.edits, edits=None)
            else:
                change = dataclasses.replace(message, attachments=())  # its words change: its files are kept already
                if self.ownership is None:
                    return self.edits.accept(surface, change, taken, running=self.state == "running")
                journaled = self.edits.journal(change, taken, here=False)  # the conversation's owner takes it
                return None if journaled is None else self._owned(journaled.conversation_key)
        if not self.journal.record(message):
            log.info("ignoring a redelivered message %s/%s", message.surface, message.message_id)
            return None
        if self.state != "running":  # start() replays it (it looks at the journal until nothing is new)
            log.info("journaled %s/%s to answer after the %s", message.surface, message.message_id,
                     "restart" if self.closing else "start")
            return None

        if self.ownership is not None:
            return self._owned(message.conversation_key)

        async def dispatch() -> None:
            if self.closing:
                log.info("journaled %s/%s to answer after the restart", message.surface, message.message_id)
                return
            await self._dispatch(self.conversation(message.conversation_key, surface), message)

        return dispatch

    async def prompt(self, message: InboundMessage) -> None:
        """Queue ``message`` as a prompt whatever its words: never a command or an answer to a question
        (``acp-relay ask``: its whole argument is the prompt). Journaled like any message; its surface
        must be attached, and the engine started."""
        surface = self.surfaces[message.surface]
        if self.journal.record(message):
            await self._enqueue(self.conversation(message.conversation_key, surface), QueueItem(message), replay=False)

    def permits(self, surface: str, user_id: str) -> bool:
        """``user_id`` is on ``surface``'s allow-list."""
        return self.access.permits(surface, user_id)

    def reject(self, surface: str, message_id: str, reason: str) -> None:
        """An update the surface could not read (or cannot serve): stored as rejected, so the surface may
        confirm it to its platform and go on (the surface has logged it, without its text)."""
        self.journal.reject(surface, message_id, reason)

    async def _dispatch(self, conv: Conversation, msg: InboundMessage, *, replay: bool = False) -> None:
        if msg.edits is not None:  # an edit journaled for the conversation's owner (relays sharing a store)
            self.journal.complete(msg)
            await self.edits.take(conv, msg)
            return
        again = parse_resend_reply(msg.text) if self.resends.open_in(conv.key) else None
        if again is not None:  # the numbered answer to "send it again?" after a restart
            self.journal.complete(msg)
            await self.resends.answer(conv.key, again)
            return
        if await self._answers_form(conv, msg):
            return
        reply = parse_approval_reply(msg.text)
        if reply is not None:  # an answer to an approval, never a prompt (even when it came too late)
            if self.approvals.resolve_reply(conv.key, reply) is None:
                await self.outbox.reply(conv.surface, msg, wording.APPROVAL_EXPIRED)
            self.journal.complete(msg)
            return
        if self.picks.is_open(conv.key):  # a number answering a numbered list of choices (no buttons here)
            if await self.control.switches.numbered(conv, msg):
                self.journal.complete(msg)
                return
            self.picks.forget(conv.key)  # anything else moves on: the list is closed
        command = route(msg.text, conv.surface.commands, conv.surface.bot_usernames)
        if command is IGNORED:  # addressed to another bot in the same chat
            self.journal.complete(msg)
            return
        if command is not None and command.action == "compact":
            # Whatever the surface's spelling (!compact, /compact@bot...), the agent gets "/compact".
            text = f"/compact {command.argument}".rstrip()
            await self._enqueue(conv, QueueItem(dataclasses.replace(msg, text=text), compact=True), replay=replay)
            return
        if command is None and not msg.text.strip() and not msg.attachments:
            # Nothing to send (a surface read no words in it): said so, not "the agent finished without
            # writing a reply" to a prompt it never got.
            self.journal.complete(msg)
            await self.outbox.reply(conv.surface, msg, wording.NOTHING_TO_SEND)
            return
        if command is None:
            typed = agent_command(msg.text, conv.session.commands if conv.session is not None else ())
            if typed is not None:  # the agent's own command, typed in this surface's way: sent as /name
                msg = dataclasses.replace(msg, text=typed)
            await self._enqueue(conv, QueueItem(msg), replay=replay)
            return
        if command.action == "steer":
            await self._steer(conv, dataclasses.replace(msg, text=command.argument), replay=replay)
            return
        try:
            await self.control.run(conv, command, msg)
        finally:
            self.journal.complete(msg)

    async def _answers_form(self, conv: Conversation, msg: InboundMessage) -> bool:
        """A message (not a command) while the agent waits on a form answers it: taken, or asked again
        with a sentence saying what fits."""
        form = self.forms.open_in(conv.key)
        if form is None or route(msg.text, conv.surface.commands, conv.surface.bot_usernames) is not None:
            return False
        self.journal.complete(msg)
        again = form.reply(msg.text)
        if again is not None:
            await self.outbox.reply(conv.surface, msg, again)
        return True

    async def _enqueue(self, conv: Conversation, item: QueueItem, *, replay: bool) -> None:
        if replay:
            item = dataclasses.replace(item, replay=True)
        limit = self.config.engine.queue_limit
        if len(conv.queue) >= limit:
            self.journal.complete(item.message)
            await self.outbox.reply(conv.surface, item.message, wording.queue_full_text(limit))
            return
        position = conv.enqueue(item)
        if position > 0 and not replay:  # its receipt: add it to the running turn, send it now, or drop it
            receipt, buttons = self.steering.buttons(conv, item)
            shown = await self.outbox.reply(conv.surface, item.message, wording.queued_text(position), buttons=buttons)
            if receipt is not None:
                receipt.message_id = shown or ""

    async def _steer(self, conv: Conversation, msg: InboundMessage, *, replay: bool) -> None:
        """``/steer text``: the words join the running turn where the agent can take them; else they
        wait in line (or start a turn, when none runs)."""
        if not msg.text.strip():
            self.journal.complete(msg)
            await self.outbox.reply(conv.surface, msg, tw.STEER_EMPTY)
            return
        if self.steering.can_steer(conv):
            if await self.steering.steer(conv, msg):
                await self.outbox.reply(conv.surface, msg, tw.steered_text(msg.text))
                return
            await self.outbox.reply(conv.surface, msg, tw.STEER_FAILED)
        elif conv.busy:
            await self.outbox.reply(conv.surface, msg, tw.STEER_UNSUPPORTED)
        await self._enqueue(conv, QueueItem(msg), replay=replay)

    async def handle_button(self, press: ButtonPress) -> PressResult:
        """Resolve a button by its one-time token; a stale or foreign tap changes nothing."""
        surface = self.surfaces.get(press.surface)
        if surface is None or not self.access.permits(press.surface, press.user_id):
            log.warning("button press refused: %s user %s", press.surface, press.user_id)
            return PressResult("refused", wording.unauthorised_text(press.user_id))
        key, ownership = press.conversation_key, self.ownership
        if ownership is None or self.calls is None:
            return await self._press_here(press)
        # Relays sharing a store: a press acts where the conversation's owner is (its approvals, its
        # questions); one nobody owns is taken here first, as its next message would be (its writes
        # are then fenced by this relay's lease).
        held = ownership.lease(key) is not None
        if not held and not ownership.answers(key):
            return await presses.forward(self.calls, press)  # another relay owns the conversation
        result = await self._press_here(press)
        if not held and key not in self.conversations:
            ownership.release(key)  # taken for a press that started nothing: the next message's relay takes it
        return result

    async def _press_here(self, press: ButtonPress) -> PressResult:
        """Resolve a press of a conversation this relay answers (its approvals, resends and choices)."""
        conv = self.conversations.get(press.conversation_key)
        scope = conv.running if conv is not None else None
        if scope is not None and press.token == scope.stop_token:  # Stop, under the answer being written
            return await presses.stopped(self.tasks.spawn(self.stop(press.conversation_key),
                                                          name=f"stop-{press.conversation_key}"))
        pending = self.approvals.resolve_token(press.conversation_key, press.token)
        if pending is not None:
            return PressResult("resolved", wording.approval_outcome_text(pending.future.result()))
        answered = self.forms.press(press.conversation_key, press.token)
        if answered is not None:
            return PressResult("resolved", answered)
        steered = await self.steering.press(self.conversations.get(press.conversation_key), press.token)
        if steered is not None:
            return steered
        resent = await self.resends.press(press.conversation_key, press.token)
        if resent is not None:
            return resent
        conv = self.conversations.get(press.conversation_key)
        if conv is not None:
            chosen = await self.control.choose_model(conv, press.token)
            if chosen is not None:
                return chosen
            picked = await self.control.switches.press(conv, press.token)
            if picked is not None:
                return picked
        return PressResult("expired", wording.PRESS_EXPIRED)

    # -- the dashboard's controls ----------------------------------------------------------

    def _by_key(self, conversation_key: str) -> Conversation:
        surface = self.surfaces.get(conversation_key.split(":", 1)[0])
        if surface is None:
            raise KeyError(conversation_key)
        return self.conversation(conversation_key, surface)

    async def stop(self, conversation_key: str) -> None:
        """The stop action (the dashboard's Stop button): ends the turn, then says so once."""
        conv = self.conversations.get(conversation_key)
        if conv is not None:
            await self.control.run(conv, Command("stop"), None)

    def status(self, conversation_key: str) -> ConversationStatus:
        """Agent, model, folder, session, context and queue of a conversation (never starts an agent)."""
        return self.control.status(conversation_key, self.conversations.get(conversation_key))

    async def models(self, conversation_key: str) -> tuple[str | None, tuple[str, ...]]:
        """The current model and the models the agent offers (binds a session, so the agent starts)."""
        session = await self.control.session_for(self._by_key(conversation_key))
        return session.current_model, session.models

    async def set_model(self, conversation_key: str, model: str) -> None:
        """Switch the conversation's model (its first message need not have been sent yet)."""
        await self.control.set_model(self._by_key(conversation_key), model)

    async def choice_list(self, conversation_key: str, kind: str, page: str = "") -> ChoiceList:
        """What the project, agent, sessions or mode control offers (the panel's pickers)."""
        if kind not in SWITCH_ACTIONS:
            raise KeyError(kind)
        return await self.control.switches.listing(self._by_key(conversation_key), kind, page)

    async def choose(self, conversation_key: str, kind: str, value: str) -> str:
        """Switch the conversation's project, agent, session or mode; the sentence saying what happened."""
        if kind not in SWITCH_ACTIONS:
            raise KeyError(kind)
        return await self.control.switches.choose(self._by_key(conversation_key), kind, value)
