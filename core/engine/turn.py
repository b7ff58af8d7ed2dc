"""Running one turn: session, prompt, retry ladder, rendering, delivery. The error funnel."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from core.acp.client import AcpError, AcpTimeoutError
from core.acp.error_text import RawErrorHold, is_echo
from core.acp.session_handle import AcpRuntimeError
from core.acp.types import (
    STOP_REASON_CANCELLED,
    STOP_REASON_END_TURN,
    TOOL_STATUS_DENIED,
    AcpEvent,
    CompactionStatus,
    KiroMetadata,
    Notice,
    PermissionRequest,
    TextChunk,
    ToolCall,
    TurnEnded,
    UsageUpdate,
)
from core.config import TimeoutsConfig
from core.engine import wording
from core.engine.delivery import Outbox
from core.engine.document import Document
from core.engine.indicator import TypingIndicator
from core.engine.journal import Journal
from core.engine.messages import InboundMessage, QueueItem
from core.engine.patience import AGENT_RETRY_KEY, PATIENCE_TICK_S, Patience
from core.engine.ports import ConversationView
from core.engine.streamer import Streamer
from core.engine.surface import DeliveryError
from core.failures import AGENTS_THAT_RETRY, describe, is_session_lost
from core.retry import Attempt, RetryPolicy, with_retries

__all__ = ["TurnDeps", "TurnRunner", "prompt_content"]

log = logging.getLogger("acp_relay.engine.turn")

Sleep = Callable[[float], Awaitable[None]]


def prompt_content(message: InboundMessage, *, images_ok: bool = True) -> str | list[dict[str, Any]]:
    """Text plus image attachments as ACP content blocks (images only to agents that take them)."""
    images = [a for a in message.attachments if a.kind == "image" and a.data] if images_ok else []
    if not images:
        return message.text
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    blocks += [{"type": "image", "mimeType": a.mime_type, "data": base64.b64encode(a.data).decode()}
               for a in images]
    return blocks


class _AttemptOutput:
    """What one attempt produced: the ladder may retry only while this holds no answer."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.tool_ran = False
        self.hold = RawErrorHold()  # text that reads like a raw provider error waits to be shown

    def reset(self) -> None:
        self.text.clear()
        self.tool_ran = False
        self.hold = RawErrorHold()

    def joined(self) -> str:
        return "".join(self.text)

    def only_echoes(self, exc: AcpError) -> bool:
        """True when the only thing this attempt produced is the error's own words."""
        return not self.tool_ran and is_echo(self.joined(), exc)


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What a turn needs from the relay around it."""

    timeouts: TimeoutsConfig
    policy: RetryPolicy
    sleep: Sleep
    cancel_wait_s: float
    outbox: Outbox
    journal: Journal
    #: Ask the person about one permission request (buttons or numbered replies); returns an option kind.
    ask_approval: Callable[[ConversationView, PermissionRequest, Streamer], Awaitable[str]]
    #: An answer is cut past this many bytes; the rest is offered as a file.
    max_answer_bytes: int | None = None


class TurnRunner:
    """Runs a queued message as a turn and always delivers a final state to the person."""

    def __init__(self, deps: TurnDeps) -> None:
        self.deps = deps

    async def run(self, conv: ConversationView, item: QueueItem) -> None:
        """Answer ``item`` in ``conv``: stream the reply, and deliver its final state whatever happens."""
        doc = Document(max_bytes=self.deps.max_answer_bytes)
        journal = self.deps.journal
        streamer = self.deps.outbox.streamer(conv.surface, conv.key, reply_to=item.message.message_id,
                                             log=journal.reply_log(item.message))
        async with streamer:
            if item.replay:  # a restart: the answer goes on in the messages the person already sees
                await streamer.resume(journal.reply_messages(item.message))
            await _Turn(self.deps, conv, item, doc, streamer).run()


class _Turn:
    """One message being answered: its document, its stream, and what its current attempt did."""

    def __init__(self, deps: TurnDeps, conv: ConversationView, item: QueueItem, doc: Document,
                 streamer: Streamer) -> None:
        self.deps, self.conv, self.item, self.doc, self.streamer = deps, conv, item, doc, streamer
        self.msg = item.message
        self.started = time.monotonic()
        self.backend = "generic"
        self.current = Attempt(0)
        self.seen = _AttemptOutput()
        self.lost_once = False
        self.compaction_failed = False
        self.last_failure: AcpError | AcpRuntimeError | None = None  # what the ladder is retrying
        self.denied = False  # a tool call was denied in this turn
        self.patience = Patience(silent_retrier=self._silent)
        self.interrupted = False  # the relay is shutting down: the message stays unfinished
        self.tools_noted: set[str] = set()  # tool calls the journal knows may have run

    # -- the error funnel ------------------------------------------------------------------

    async def run(self) -> None:
        conv, doc = self.conv, self.doc
        async with TypingIndicator(conv.surface, conv.key, sleep=self.deps.sleep) as typing:
            try:
                await self.answer()
            finally:
                conv.cancellable = False
                doc.finish(time.monotonic() - self.started, conv.context_pct)
                await typing.pause()  # still shown, no longer refreshed: cleared once the answer is out
                await self.deps.outbox.deliver(self.streamer, doc.parts())
                if not self.interrupted:  # answered the moment it is shown; a crash now repeats nothing
                    self.deps.journal.complete(self.msg)
                if doc.overflow:
                    await self.deps.outbox.attach_rest(self.streamer, doc.overflow)

    async def answer(self) -> None:
        """The retry ladder, and every way it can end folded into the document."""
        doc = self.doc
        ticker = asyncio.create_task(self._keep_patient(), name="turn-patience")
        try:
            stop = await with_retries(self.attempt, policy=self.deps.policy, on_retry=self.on_retry,
                                      sleep=self.deps.sleep, agent_retries=self._retries_itself)
            if doc.has_notice("retry"):
                self.on_event(Notice(wording.RETRY_SUCCEEDED, key="retry"))
            if self.denied and not doc.text.strip():
                self.on_event(Notice(wording.TOOL_DENIED, key="denied"))
            if self.item.compact and stop == STOP_REASON_END_TURN and not self.compaction_failed:
                self.on_event(CompactionStatus("completed", wording.COMPACTED))
        except asyncio.CancelledError:
            if not self.conv.stopping:  # the relay is shutting down: say so; a restart replays the message
                doc.set_partial_note(wording.INTERRUPTED_BY_RESTART)
                self.interrupted = True
                raise
            doc.apply(TurnEnded(STOP_REASON_CANCELLED))
        except (AcpError, AcpRuntimeError) as exc:
            self.failed(exc)
        except Exception as exc:  # the funnel: the traceback is logged here, once
            log.exception("turn in %s failed unexpectedly", self.conv.key)
            doc.set_error(describe(exc, backend=self.backend).prose)
        finally:
            ticker.cancel()

    def _retries_itself(self) -> bool:
        """This agent retries a failed model call by itself: the ladder must not multiply that."""
        return self.backend in AGENTS_THAT_RETRY

    def _silent(self) -> bool:
        """Nothing but silence so far from an agent that retries in silence."""
        return self._retries_itself() and not self.seen.text and not self.seen.tool_ran

    async def _keep_patient(self) -> None:
        """Bring the "still retrying" line up to date while the turn runs."""
        while True:
            await self.deps.sleep(PATIENCE_TICK_S)
            if (line := self.patience.tick()) is not None:
                self._patience_line(line)

    def _patience_line(self, line: str) -> None:
        """The "still retrying" line as the turn words it (on_event rewrites the session's own)."""
        self.doc.apply(Notice(line, key=AGENT_RETRY_KEY))
        self.streamer.update(self.doc.parts)

    def failed(self, exc: AcpError | AcpRuntimeError) -> None:
        """The ladder gave up, or the failure was terminal: prose in place of (or after) the answer."""
        doc = self.doc
        if doc.has_notice("retry"):
            self.on_event(Notice(wording.retry_gave_up(self.deps.policy.attempts), key="retry"))
        if (line := self.patience.gave_up()) is not None:
            self._patience_line(line)
        doc.set_error(describe(exc, backend=self.backend).prose, raw_message=getattr(exc, "message", ""))
        if isinstance(exc, AcpTimeoutError) and exc.partial_output:
            if not doc.text:
                doc.apply(TextChunk(exc.partial_output))
            doc.set_partial_note()  # what streamed stays, marked as incomplete
        log.info("turn in %s failed: %s", self.conv.key, type(exc).__name__)

    # -- one attempt on the retry ladder ---------------------------------------------------

    async def attempt(self, state: Attempt) -> str:
        """Prompt the agent once; returns the stop reason. A lost session is retried once, anew."""
        conv, msg = self.conv, self.msg
        self.current = state
        self.seen.reset()
        notices: list[Notice] = []
        session = await conv.ensure_session(notices)
        self.backend = session.runtime.backend
        for notice in notices:
            self.on_event(notice)
        images_ok = session.runtime.accepts_images
        if not images_ok and any(a.kind == "image" for a in msg.attachments):
            self.on_event(Notice(wording.IMAGES_NOT_SUPPORTED, key="images"))
        state.reached_agent = True
        timeouts = self.deps.timeouts
        try:
            stats = await session.prompt(prompt_content(msg, images_ok=images_ok), on_event=self.on_event,
                                         approver=self.approver, timeout_s=timeouts.prompt_s,
                                         approval_timeout_s=timeouts.approval_s,
                                         cancel_wait_s=self.deps.cancel_wait_s)
        except AcpError as exc:
            if self.seen.only_echoes(exc):
                # claude-agent-acp and codex-acp stream the error text before the error: that is
                # not an answer, so it does not block a retry, and the person reads it once.
                state.side_effects = False
                self.seen.hold.drop()
                self.doc.drop_echo(self.seen.joined())
            for shown in self.seen.hold.release():  # held text that was an answer after all
                self.doc.apply(shown)
            if not is_session_lost(exc) or self.lost_once or state.side_effects:
                raise
            self.lost_once = True  # the agent forgot the session: once, on a new one, with a notice
            conv.drop_session()
            self.on_event(Notice(wording.SESSION_LOST, key="session"))
            return await self.attempt(state)
        if stats.empty and self.last_failure is not None:
            # claude-agent-acp 0.23 answers a prompt retried after a failed model call with an empty
            # end_turn although that call failed again: the failure again, never a silent success.
            raise self.last_failure
        return stats.stop_reason

    async def on_retry(self, state: Attempt, delay: float, exc: BaseException) -> None:
        """One "retrying" notice, corrected in place as the ladder goes on."""
        if isinstance(exc, AcpError | AcpRuntimeError):
            self.last_failure = exc
        self.on_event(Notice(wording.retrying(state.number, self.deps.policy.attempts), key="retry"))

    # -- what the agent sends --------------------------------------------------------------

    def on_event(self, event: AcpEvent) -> None:
        """Fold an event into the reply; note what makes a retry (or a replay) unsafe."""
        seen, conv = self.seen, self.conv
        if isinstance(event, Notice) and event.key == AGENT_RETRY_KEY and event.text:
            event = Notice(self.patience.retrying(), key=AGENT_RETRY_KEY)  # the session's, with the time
        if isinstance(event, TextChunk):
            if event.text:
                seen.text.append(event.text)
            if event.text.strip() and (line := self.patience.answered()) is not None:
                self.doc.apply(Notice(line, key=AGENT_RETRY_KEY))
        elif isinstance(event, ToolCall) and (event.ran or (event.started and self._gate_allows_all())):
            self._tool_may_run(event)
        elif isinstance(event, ToolCall) and event.status == TOOL_STATUS_DENIED:
            self.denied = True
        elif isinstance(event, CompactionStatus) and event.status == "failed":
            self.compaction_failed = True
        elif isinstance(event, KiroMetadata) and event.context_pct is not None:
            conv.context_pct = event.context_pct
        elif isinstance(event, UsageUpdate) and event.used is not None and event.size:
            conv.context_pct = 100.0 * event.used / event.size
        self.current.side_effects = seen.tool_ran or bool(seen.text)
        if isinstance(event, TextChunk) and event.text.strip() and self.streamer.rollover_due(self.doc.part_count):
            self.doc.break_here()  # the message being written is too old to keep editing: go on below
        for shown in seen.hold.take(event):
            self.doc.apply(shown)
        self.streamer.update(self.doc.parts)  # rendered when the streamer flushes, not per event

    async def approver(self, request: PermissionRequest) -> str:
        """Ask the person (buttons or numbered replies); a platform failure cancels the tool call.

        The answer so far is shown first, and what the agent writes after the decision continues in
        a new part, below the prompt the person is looking at.
        """
        self.current.side_effects = True  # never retry past an approval request
        self.doc.break_here()
        try:
            await self.streamer.flush(self.doc.parts())
            kind = await self.deps.ask_approval(self.conv, request, self.streamer)
        except DeliveryError as exc:  # the platform's failure, not the agent's
            log.warning("could not show an approval request in %s: %s", self.conv.key, exc)
            self.on_event(Notice(wording.APPROVAL_NOT_SHOWN, key="approval"))
            return "cancelled"
        if kind.startswith("allow"):
            self._tool_may_run(request.tool_call)
        return kind

    def _tool_may_run(self, call: ToolCall) -> None:
        if call.tool_call_id not in self.tools_noted:  # a restart must not run it twice without asking
            self.tools_noted.add(call.tool_call_id)
            self.deps.journal.tool_may_run(self.msg, call)
        self.seen.tool_ran = self.current.side_effects = True

    def _gate_allows_all(self) -> bool:
        session = self.conv.session
        return session is not None and session.runtime.spec.tool_gate == "allow"
