"""A turn's reply in a chat: the document folded from its events, streamed into platform messages
(posted once, then edited, split at the surface's limit), approval prompts with buttons (or numbered
replies), the typing indicator, and the final state delivered whatever happened."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from core.acp.exchange import ElicitationRequest
from core.acp.types import AcpEvent, Notice, PermissionRequest, TextChunk
from core.engine import switch_wording, wording
from core.engine import twoway_wording as tw
from core.engine.approval_prompt import ApprovalPrompts
from core.engine.delivery import Outbox
from core.engine.document import Document
from core.engine.form_prompt import FormPrompts, declined_because, fields_of
from core.engine.forms import Unrenderable
from core.engine.indicator import TypingIndicator
from core.engine.journal import Journal
from core.engine.messages import QueueItem
from core.engine.reply import RetryEnded, Retrying, TurnOutcome, TurnScope
from core.engine.shared_files import Outgoing
from core.engine.streamer import Streamer
from core.engine.surface import Button, DeliveryError
from core.engine.turn_files import INLINE_DIFF_CHARS, TurnFiles
from core.errors import AcpTimeoutError
from core.store import LeaseLost, StoreError

__all__ = ["ChatReplies", "ChatReply"]

log = logging.getLogger("acp_relay.engine.chat_reply")

_RETRY_KEY = "retry"


class ChatReplies:
    """Makes each turn's chat reply."""

    def __init__(self, outbox: Outbox, journal: Journal, prompts: ApprovalPrompts, *,
                 sleep: Callable[[float], Awaitable[None]], max_answer_bytes: int | None = None,
                 forms: FormPrompts | None = None) -> None:
        self.outbox = outbox
        self.journal = journal
        self.prompts = prompts
        #: Asks the agent's questions (None: they are declined, the person told why).
        self.forms = forms
        self.sleep = sleep
        #: An answer is cut past this many bytes; the rest is offered as a file.
        self.max_answer_bytes = max_answer_bytes

    @asynccontextmanager
    async def open(self, scope: TurnScope, item: QueueItem) -> AsyncIterator[ChatReply]:
        """The reply to ``item``: its stream (resumed in the messages shown before a restart) and the
        typing indicator, open until the turn is finished."""
        streamer = self.outbox.streamer(scope.surface, scope.key, reply_to=item.message.message_id,
                                        origin=item.message.origin, log=self.journal.reply_log(item.message))
        caps = streamer.capabilities
        if caps.stop_button and caps.can_buttons and caps.can_edit:  # (a press: ``Engine._press_here``)
            streamer.live_buttons = (Button(wording.STOP_LABEL, scope.stop_token, "danger"),)
        async with streamer:
            if item.replay:  # a restart: the answer goes on in the messages the person already sees
                await streamer.resume(self.journal.reply_messages(item.message))
            origin = item.message.origin
            async with TypingIndicator(scope.surface, scope.key, origin=origin, sleep=self.sleep,
                                       answered=lambda: streamer.shown) as typing:
                yield ChatReply(self, scope, item, Document(max_bytes=self.max_answer_bytes), streamer, typing)


class ChatReply:
    """One turn's document and stream."""

    can_ask = True

    def __init__(self, replies: ChatReplies, scope: TurnScope, item: QueueItem, doc: Document, streamer: Streamer,
                 typing: TypingIndicator) -> None:
        self.replies, self.scope, self.item = replies, scope, item
        self.doc, self.streamer, self.typing = doc, streamer, typing
        self.files = TurnFiles()  # what the agent shared and edited, sent after the answer

    def show(self, event: AcpEvent) -> None:
        """Fold ``event`` into the document; the streamer renders it when it next flushes."""
        doc = self.doc
        if isinstance(event, Retrying):  # one line, corrected in place as the ladder goes on
            doc.apply(Notice(wording.retrying(event.attempt, event.total), key=_RETRY_KEY))
        elif isinstance(event, RetryEnded):
            if doc.has_notice(_RETRY_KEY):
                said = wording.RETRY_SUCCEEDED if event.succeeded else wording.retry_gave_up(event.attempts)
                doc.apply(Notice(said, key=_RETRY_KEY))
        else:
            self.files.take(event)
            if isinstance(event, TextChunk) and event.text.strip() and self.streamer.rollover_due(doc.part_count):
                doc.break_here()  # the message being written is too old to keep editing: go on below
            doc.apply(event)
        self.streamer.update(doc.parts)

    def take_back(self, text: str) -> None:
        """Remove text an attempt streamed that only echoed its error (the ladder retries)."""
        self.doc.drop_echo(text)
        self.streamer.update(self.doc.parts)

    async def approve(self, request: PermissionRequest) -> str:
        """Ask the person (buttons or numbered replies); a platform failure cancels the tool call.

        The answer so far is shown first, and what the agent writes after the decision continues in
        a new part, below the prompt the person is looking at.
        """
        self.doc.break_here()
        try:
            await self.streamer.flush(self.doc.parts())
            return await self.replies.prompts.ask(self.scope, request, self.streamer)
        except DeliveryError as exc:  # the platform's failure, not the agent's
            log.warning("could not show an approval request in %s: %s", self.scope.key, exc)
            self.show(Notice(wording.APPROVAL_NOT_SHOWN, key="approval"))
            return "cancelled"

    def _files_in_answer(self) -> tuple[list[Outgoing], str]:
        """The files that may be sent (those that may not are said in the answer) and the turn's diff
        (shown in the answer when it is short)."""
        session = self.scope.binding.session
        folder = session.runtime.cwd if session is not None else ""
        sent, refused = self.files.checked(folder, self.streamer.capabilities.max_file_bytes)
        for i, not_sent in enumerate(refused):
            self.doc.apply(Notice(not_sent.sentence, key=f"file-{i}"))
        diff = self.files.diff(folder)
        if diff and len(diff) <= INLINE_DIFF_CHARS:
            self.doc.apply(TextChunk(f"\n\n```diff\n{diff}```\n"))
        return sent, diff

    async def elicit(self, request: ElicitationRequest) -> dict[str, Any]:
        """Ask the agent's question (a form, or a link to open) below the answer so far, like an
        approval; a form a chat cannot show is declined, and the person told why."""
        forms = self.replies.forms
        try:
            if forms is None:
                raise Unrenderable("This relay shows no forms here.")
            fields = fields_of(request)
        except Unrenderable as exc:
            log.info("declined a form in %s: %s", self.scope.key, exc)
            self.show(Notice(tw.FORM_NOT_ASKED.format(why=exc), key="form"))
            return declined_because(str(exc))
        self.doc.break_here()
        try:
            await self.streamer.flush(self.doc.parts())
            return await forms.ask(self.scope, request, fields, self.streamer)
        except DeliveryError as exc:
            log.warning("could not show a form in %s: %s", self.scope.key, exc)
            self.show(Notice(wording.APPROVAL_NOT_SHOWN, key="approval"))
            return {"action": "cancel"}

    async def finish(self, outcome: TurnOutcome) -> None:
        """The final state, delivered whatever happened; the message is then answered (unless the
        relay is shutting down: a restart answers it again, in the messages already shown)."""
        doc, replies, msg = self.doc, self.replies, self.item.message
        if outcome.interrupted:
            doc.set_partial_note(wording.INTERRUPTED_BY_RESTART)
        elif outcome.described is not None:
            failure = outcome.failure
            doc.set_error(outcome.described.prose, raw_message=getattr(failure, "message", ""),
                          reset=outcome.described.reset)
            if isinstance(failure, AcpTimeoutError) and failure.partial_output:
                if not doc.text:
                    doc.apply(TextChunk(failure.partial_output))
                doc.set_partial_note()  # what streamed stays, marked as incomplete
        sent, diff = ([], "") if outcome.interrupted else self._files_in_answer()
        doc.finish(outcome.elapsed_s, outcome.context_pct,
                   switch_wording.cost_text({outcome.cost.currency: outcome.cost.amount}) if outcome.cost else "")
        await self.typing.pause()  # still shown, no longer refreshed: cleared once the answer is out
        await replies.outbox.deliver(self.streamer, doc.parts())
        await self.files.send(self.streamer, sent, diff)
        if not outcome.interrupted:  # answered the moment it is shown; a crash now repeats nothing
            try:
                replies.journal.complete(msg)
            except LeaseLost:
                raise
            except StoreError as exc:  # a full disk: the answer stands; only a restart would ask again
                log.warning("the answer in %s could not be noted as given (%s): a restart would send the "
                            "message to the agent again", self.scope.key, exc)
            self.scope.completed = True
        if doc.overflow:
            await replies.outbox.attach_rest(self.streamer, doc.overflow)
