"""The engine: the one core every surface plugs into (it implements ``Inbound``)."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from core.acp.client import AcpError
from core.acp.pool import RuntimePool
from core.acp.session import AcpSession
from core.acp.session_handle import AcpRuntimeError
from core.acp.spec import resolve_cwd
from core.acp.types import Notice, PermissionRequest
from core.agents import BUILTIN_AGENTS, choose_agent
from core.config import RelayConfig
from core.engine import wording
from core.engine.access import AccessControl
from core.engine.approvals import Approvals
from core.engine.conversation import Conversation, QueueItem
from core.engine.router import Command, parse_approval_reply, route
from core.engine.streamer import Streamer
from core.engine.surface import (
    Attachment,
    ButtonPress,
    ConversationStatus,
    DeliveryError,
    InboundMessage,
    Surface,
)
from core.engine.tasks import TaskSet
from core.engine.turn import TurnRunner
from core.failures import _format_acp_error
from core.retry import RetryPolicy
from core.store import ConversationRecord, Store

__all__ = ["ConversationStatus", "Engine"]

log = logging.getLogger("acp_relay.engine")

#: Handled message ids are remembered this long (platforms redeliver within minutes, not weeks).
_DEDUP_WINDOW_S = 7 * 24 * 3600.0


def _payload(msg: InboundMessage) -> dict[str, Any]:
    return {"text": msg.text, "user_id": msg.user_id, "display_name": msg.display_name,
            "reply_to": msg.reply_to, "attachments": [
                {"kind": a.kind, "mime_type": a.mime_type, "name": a.name,
                 "data": base64.b64encode(a.data).decode()} for a in msg.attachments]}


def _message(surface: str, message_id: str, key: str, payload: dict[str, Any]) -> InboundMessage:
    attachments = tuple(Attachment(a["kind"], a["mime_type"], base64.b64decode(a["data"]), a.get("name", ""))
                        for a in payload.get("attachments", []))
    return InboundMessage(surface, key, str(payload.get("user_id", "")), str(payload.get("text", "")),
                          message_id, str(payload.get("display_name", "")), attachments, payload.get("reply_to"))


class Engine:
    """De-duplicates, checks access, routes commands, queues prompts and runs turns."""

    def __init__(self, config: RelayConfig, store: Store, pool: RuntimePool, *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, cancel_wait_s: float = 10.0) -> None:
        self.config = config
        self.store = store
        self.pool = pool
        self.sleep = sleep
        self.cancel_wait_s = cancel_wait_s
        self.policy = RetryPolicy(config.retry.attempts, config.retry.budget_s, config.retry.base_delay_s)
        self.access = AccessControl()
        self.approvals = Approvals()
        self.tasks = TaskSet()
        self.runner = TurnRunner(self)
        self.surfaces: dict[str, Surface] = {}
        self.conversations: dict[str, Conversation] = {}
        self._redelivery: asyncio.Task[Any] | None = None
        self.closing = False  # shutting down: open approvals are left as they are (a later tap is "expired")

    # -- wiring ----------------------------------------------------------------------------

    def attach(self, surface: Surface, allowed_user_ids: Collection[str | int]) -> None:
        """Serve ``surface``; only ``allowed_user_ids`` may talk to the agent through it."""
        self.surfaces[surface.name] = surface
        self.access.allow(surface.name, allowed_user_ids)

    def edit_interval(self, surface: Surface) -> float:
        """The surface's own interval when it names one (the dashboard streams faster), else the config's."""
        own = surface.capabilities.edit_interval_s
        return self.config.engine.edit_interval_s if own is None else own

    def conversation(self, key: str, surface: Surface) -> Conversation:
        """The conversation under ``key``, created on first use."""
        conv = self.conversations.get(key)
        if conv is None:
            conv = self.conversations[key] = Conversation(key, surface, self)
        return conv

    async def start(self) -> None:
        """Replay what a killed relay had received but not finished, then pending deliveries."""
        self.store.prune_inbound(_DEDUP_WINDOW_S)
        for rec in self.store.unfinished_inbound():
            surface = self.surfaces.get(rec.surface)
            if surface is None:
                continue
            if rec.progress == "tool":  # replaying could run a tool twice: tell the person instead
                self.store.complete_inbound(rec.surface, rec.message_id)
                await self.say(surface, rec.conversation_key, wording.NOT_REPLAYED_AFTER_TOOL)
                continue
            msg = _message(rec.surface, rec.message_id, rec.conversation_key, rec.payload)
            log.info("resuming an unfinished message in %s", rec.conversation_key)
            await self._dispatch(self.conversation(rec.conversation_key, surface), msg, replay=True)
        self.schedule_redelivery()

    async def close(self) -> None:
        """Cancel running turns (their messages stay unfinished, so a restart resumes them)."""
        self.closing = True
        await self.tasks.close()

    # -- inbound ---------------------------------------------------------------------------

    async def handle_message(self, message: InboundMessage) -> None:
        """A person wrote: de-duplicate, check access, then a command or a queued prompt."""
        surface = self.surfaces.get(message.surface)
        if surface is None:
            log.warning("message from a surface that is not attached: %s", message.surface)
            return
        if not self.access.permits(message.surface, message.user_id):
            if self.access.first_refusal(message.surface, message.user_id):
                await self.say(surface, message.conversation_key, wording.unauthorised_text(message.user_id))
            return
        if not self.store.record_inbound(message.surface, message.message_id, message.conversation_key,
                                         _payload(message)):
            log.info("ignoring a redelivered message %s/%s", message.surface, message.message_id)
            return
        await self._dispatch(self.conversation(message.conversation_key, surface), message)

    async def _dispatch(self, conv: Conversation, msg: InboundMessage, *, replay: bool = False) -> None:
        reply = parse_approval_reply(msg.text)
        if reply is not None:  # an answer to an approval, never a prompt (even when it came too late)
            if self.approvals.resolve_reply(conv.key, reply) is None:
                await self.say(conv.surface, conv.key, wording.APPROVAL_EXPIRED)
            self.store.complete_inbound(msg.surface, msg.message_id)
            return
        command = route(msg.text, conv.surface.commands)
        if command is not None and command.action == "compact":
            # Whatever the surface's spelling (!compact, /compact@bot...), the agent gets "/compact".
            text = f"/compact {command.argument}".rstrip()
            await self._enqueue(conv, QueueItem(dataclasses.replace(msg, text=text), compact=True), replay=replay)
            return
        if command is None:
            await self._enqueue(conv, QueueItem(msg), replay=replay)
            return
        try:
            await self._command(conv, command)
        finally:
            self.store.complete_inbound(msg.surface, msg.message_id)

    async def _enqueue(self, conv: Conversation, item: QueueItem, *, replay: bool) -> None:
        if len(conv.queue) >= self.config.engine.queue_limit:
            self.store.complete_inbound(item.message.surface, item.message.message_id)
            await self.say(conv.surface, conv.key, wording.queue_full_text(self.config.engine.queue_limit))
            return
        position = conv.enqueue(item)
        if position > 0 and not replay:
            await self.say(conv.surface, conv.key, wording.queued_text(position))

    async def handle_button(self, press: ButtonPress) -> None:
        """Resolve an approval by its one-time token; a stale or foreign tap answers "expired"."""
        surface = self.surfaces.get(press.surface)
        if surface is None or not self.access.permits(press.surface, press.user_id):
            log.warning("button press refused: %s user %s", press.surface, press.user_id)
            return
        if self.approvals.resolve_token(press.conversation_key, press.token) is None:
            await self.say(surface, press.conversation_key, wording.APPROVAL_EXPIRED)

    # -- commands --------------------------------------------------------------------------

    async def _command(self, conv: Conversation, command: Command) -> None:
        surface, key = conv.surface, conv.key
        if command.action == "stop":
            outcome = await conv.stop()  # a stopped turn's own reply says "Stopped." once it ended
            if outcome == "idle":
                await self.say(surface, key, wording.NOTHING_TO_STOP)
            elif outcome == "unconfirmed":
                await self.say(surface, key, wording.STOP_UNCONFIRMED)
        elif command.action == "reset":
            await conv.stop()
            conv.reset()
            await self.say(surface, key, wording.NEW_CONVERSATION)
        elif command.action == "status":
            await self.say(surface, key, wording.status_text(self.status(key)))
        elif command.action == "help":
            await self.say(surface, key, wording.help_text(surface.commands))
        elif command.action == "model":
            await self._model_command(conv, command.argument)

    async def _model_command(self, conv: Conversation, name: str) -> None:
        try:
            if name:
                await self.set_model(conv.key, name)
                text = wording.model_switched_text(name)
            else:
                session = await self._session_for(conv)
                text = wording.models_text(session.current_model, session.models)
        except (AcpError, AcpRuntimeError) as exc:
            text = _format_acp_error(exc)
        await self.say(conv.surface, conv.key, text)

    async def stop(self, conversation_key: str) -> None:
        """The stop action (the dashboard's Stop button): ends the turn, then says so once."""
        conv = self.conversations.get(conversation_key)
        if conv is not None:
            await self._command(conv, Command("stop"))

    def _conversation_by_key(self, conversation_key: str) -> Conversation:
        conv = self.conversations.get(conversation_key)
        if conv is None:
            surface = self.surfaces.get(conversation_key.split(":", 1)[0])
            if surface is None:
                raise KeyError(conversation_key)
            conv = self.conversation(conversation_key, surface)
        return conv

    async def models(self, conversation_key: str) -> tuple[str | None, tuple[str, ...]]:
        """The current model and the models the agent offers (binds a session, so the agent starts)."""
        session = await self._session_for(self._conversation_by_key(conversation_key))
        return session.current_model, session.models

    async def set_model(self, conversation_key: str, model: str) -> None:
        """Switch the conversation's model (its first message need not have been sent yet)."""
        conv = self._conversation_by_key(conversation_key)
        session = await self._session_for(conv)
        await session.set_model(model)
        self.store.save_conversation(dataclasses.replace(conv.record(), model=model))  # keeps session_meta

    async def _session_for(self, conv: Conversation) -> AcpSession:
        """The conversation's session outside a turn; its notices (a new session...) are said at once."""
        notices: list[Notice] = []
        session = await conv.ensure_session(notices)
        for notice in notices:
            await self.say(conv.surface, conv.key, notice.text)
        return session

    def status(self, conversation_key: str) -> ConversationStatus:
        """Agent, model, folder, session, context and queue of a conversation (never starts an agent)."""
        conv = self.conversations.get(conversation_key)
        rec = self.store.get_conversation(conversation_key)
        session = conv.session if conv is not None else None
        agent = rec.agent if rec is not None and rec.agent in (self.config.agents or BUILTIN_AGENTS) else ""
        return ConversationStatus(
            agent=agent or choose_agent(self.config)[0],
            model=(session.current_model if session else None) or (rec.model if rec else None),
            models=session.models if session else (),
            cwd=session.runtime.cwd if session else self._cwd_of(rec),
            session_id=rec.session_id if rec is not None else None,
            context_pct=conv.context_pct if conv is not None else None,
            queue_length=len(conv.queue) if conv is not None else 0,
            busy=conv.busy if conv is not None else False,
        )

    def _cwd_of(self, rec: ConversationRecord | None) -> str:
        """The folder the conversation's agent works in, resolved as the runtime will resolve it."""
        known = self.config.agents or BUILTIN_AGENTS
        wanted = rec.agent if rec is not None and rec.agent in known else None  # removed: the default
        _, agent = choose_agent(self.config, wanted)
        cwd = rec.cwd if rec is not None and rec.cwd else agent.cwd
        return str(resolve_cwd(cwd))

    # -- approvals -------------------------------------------------------------------------

    async def ask_approval(self, conv: Conversation, request: PermissionRequest, streamer: Streamer) -> str:
        """Buttons (or numbered replies) for one permission request; returns an option kind."""
        if self.approvals.remembered(conv.key, request):
            return "allow_once"
        pending = self.approvals.open(conv.key, request)
        call = request.tool_call
        text = wording.approval_prompt_text(call.title, call.kind, "\n".join(call.content))
        buttons = pending.buttons() if conv.surface.capabilities.can_buttons else ()
        if not buttons:
            text += "\n\n" + wording.APPROVAL_NUMBERED_HINT
        outcome = "expired"
        try:
            pending.message_id = await streamer.post(text, buttons)
            kind = await pending.future
            outcome = kind
            if kind == "allow_always":
                self.approvals.remember(conv.key, request)
            return kind
        except asyncio.CancelledError:  # a stop, the agent dying, or no answer within approval_s
            ended = conv.stopping or conv.session is None or not conv.session.runtime.alive
            outcome = "cancelled" if ended else "timed_out"
            raise
        finally:
            self.approvals.close(pending)
            if pending.message_id and not self.closing:
                self.tasks.spawn(self._settle_approval(conv, pending.message_id, request, text, outcome),
                                 name=f"approval-settle-{conv.key}")

    async def _settle_approval(self, conv: Conversation, message_id: str, request: PermissionRequest,
                               text: str, outcome: str) -> None:
        """The decision (a stop's "cancelled" too) reaches the agent first; then the buttons change."""
        try:
            await asyncio.wait_for(request.answered.wait(), self.cancel_wait_s)
        except TimeoutError:
            log.info("permission answer in %s was never written (turn ended first)", conv.key)
        call = request.tool_call
        final = f"{text}\n\n{wording.approval_outcome_text(outcome, call.title, call.kind)}"
        try:
            await Streamer(conv.surface, conv.key, sleep=self.sleep).edit_message(message_id, final)
        except DeliveryError as exc:
            log.warning("could not update the approval message in %s: %s", conv.key, exc)

    # -- outbound --------------------------------------------------------------------------

    async def say(self, surface: Surface, key: str, markdown: str) -> None:
        """A standalone notice, with the delivery rules (429 waits, markup falls back to plain)."""
        try:
            await Streamer(surface, key, sleep=self.sleep).post(markdown)
        except DeliveryError as exc:
            log.warning("could not deliver a notice in %s: %s", key, exc)

    def schedule_redelivery(self) -> None:
        """Resend what the ledger holds (answers a platform refused), unless that is already running."""
        if self._redelivery is None or self._redelivery.done():
            self._redelivery = self.tasks.spawn(self._redeliver(), name="redelivery")

    async def _redeliver(self) -> None:
        """Answers a platform refused earlier are resent until they land (the ledger keeps them)."""
        delay = 1.0
        # Rows for a surface this relay does not run wait in the ledger for one that does.
        while pending := [r for r in self.store.pending_outbound() if r.payload.get("surface") in self.surfaces]:
            for rec in pending:
                surface = self.surfaces[str(rec.payload["surface"])]
                text = str(rec.payload.get("text", ""))
                streamer = Streamer(surface, rec.conversation_key, sleep=self.sleep)
                try:
                    await streamer.finish(text)
                except Exception as exc:  # DeliveryError, or a surface bug: what did not arrive stays
                    log.info("redelivery to %s failed again: %r", rec.conversation_key, exc)
                    remainder = streamer.undelivered(text)
                    if remainder != text:  # part of it arrived: keep only the rest, never send it twice
                        self.store.ack_outbound(rec.id)
                        if remainder:
                            self.store.add_outbound(rec.conversation_key, {**rec.payload, "text": remainder})
                    continue
                self.store.ack_outbound(rec.id)
            await self.sleep(delay)
            delay = min(delay * 2, 60.0)
