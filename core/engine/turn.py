"""Running one turn: the session, the prompt, the retry ladder, the patience notices, the tool gate's
questions, and ONE outcome. The error funnel.

This is the agent side of every turn, whatever shows it: a chat's reply or the terminal's
(``core.engine.reply``). What the agent streams reaches the Reply as it comes, less what is really
an error (``core.acp.error_text``); how the turn ended is folded here, once, into a TurnOutcome.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from core.acp.error_text import AttemptText
from core.acp.exchange import ElicitationRequest
from core.acp.types import (
    STOP_REASON_CANCELLED,
    STOP_REASON_END_TURN,
    TOOL_STATUS_DENIED,
    AcpEvent,
    AcpPromptStats,
    CompactionStatus,
    Cost,
    Notice,
    PermissionRequest,
    RefusalInfo,
    TextChunk,
    ToolCall,
    TurnEnded,
)
from core.config import TimeoutsConfig
from core.describing import describe
from core.engine import wording
from core.engine.approvals import Approvals
from core.engine.attached import MAX_FILE_BYTES, file_blocks, not_sent
from core.engine.journal import Journal
from core.engine.messages import InboundMessage, QueueItem
from core.engine.patience import AGENT_RETRY_KEY, PATIENCE_TICK_S, Patience
from core.engine.reply import Replies, Reply, RetryEnded, Retrying, TurnOutcome, TurnScope
from core.errors import AcpError, AcpRuntimeError
from core.failures import AGENTS_THAT_RETRY, is_session_lost
from core.retry import Attempt, RetryPolicy, with_retries
from core.store import LeaseLost, StoreError

__all__ = ["TurnDeps", "TurnRunner", "prompt_content"]

log = logging.getLogger("acp_relay.engine.turn")

Sleep = Callable[[float], Awaitable[None]]


def prompt_content(message: InboundMessage, *, images_ok: bool = True) -> str | list[dict[str, Any]]:
    """Text plus attachments as ACP content blocks: text files as text (``core.engine.attached``), images
    only to agents that take them."""
    images = [a for a in message.attachments if a.kind == "image" and a.data] if images_ok else []
    files = file_blocks(message.attachments)
    if not images and not files:
        return message.text
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    blocks += files
    blocks += [{"type": "image", "mimeType": a.mime_type, "data": base64.b64encode(a.data).decode()}
               for a in images]
    return blocks


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What a turn needs from the relay around it."""

    timeouts: TimeoutsConfig
    policy: RetryPolicy
    sleep: Sleep
    cancel_wait_s: float
    journal: Journal
    #: "Allow for this session": the scopes a person allowed, per conversation.
    approvals: Approvals
    #: What shows a turn to the person (a chat's reply, or the terminal's).
    replies: Replies


class TurnRunner:
    """Runs a queued message as a turn, and always gives its Reply the final state."""

    def __init__(self, deps: TurnDeps) -> None:
        self.deps = deps

    async def run(self, scope: TurnScope, item: QueueItem) -> None:
        """Answer ``item`` in its conversation (``scope``), whatever happens."""
        async with self.deps.replies.open(scope, item) as reply:
            turn = _Turn(self.deps, scope, item, reply)
            try:
                await turn.run()
            except LeaseLost:  # past its lease's deadline: the conversation is being stopped here
                scope.disowned = True
                raise
            finally:
                scope.cancellable = False
                if not scope.disowned:  # else another relay answers it now: not a word more from here
                    await reply.finish(turn.outcome())


class _Turn:
    """One message being answered: the ladder, what its current attempt did, and how it all ended."""

    def __init__(self, deps: TurnDeps, scope: TurnScope, item: QueueItem, reply: Reply) -> None:
        self.deps, self.scope, self.item, self.reply = deps, scope, item, reply
        self.msg = item.message
        self.started = time.monotonic()
        self.backend = "generic"
        self.current = Attempt(0)
        self.text = AttemptText()  # the current attempt's text, told from an error's words
        self.tool_ran = False  # in the current attempt
        self.lost_once = False
        self.compaction_failed = False
        self.last_failure: AcpError | AcpRuntimeError | None = None  # what the ladder is retrying
        self.retries = 0
        self.denied = False  # a tool call was denied in this turn
        self.patience = Patience(silent_retrier=self._silent)
        self.ticker: asyncio.Task[None] | None = None  # keeps the patience line up to date, once it may say something
        self.over = False  # the ladder ended: nothing more to keep up to date
        self.tools_noted: set[str] = set()  # tool calls the journal knows may have run
        self.tool_note_refused = False  # the store refused such a note (said once in the log)
        # How it ended:
        self.stats: AcpPromptStats | None = None
        self.stop_reason = ""
        self.refusal: RefusalInfo | None = None
        self.failure: BaseException | None = None
        self.interrupted = False  # the relay is shutting down: the message stays unfinished
        self.cost_mark: Cost | None = None  # the session's cost when the turn began

    def outcome(self) -> TurnOutcome:
        """How the turn ended (so far)."""
        stats, failure = self.stats, self.failure
        return TurnOutcome(
            elapsed_s=time.monotonic() - self.started, stop_reason=self.stop_reason, text=self.text.text,
            tool_ran=self.tool_ran, denied=self.denied, empty=stats is not None and failure is None and stats.empty,
            context_pct=self.scope.binding.context_pct, refusal=self.refusal, failure=failure,
            cost=self.scope.binding.turn_cost(self.cost_mark),
            described=describe(failure, backend=self.backend) if failure is not None else None,
            interrupted=self.interrupted)

    # -- the error funnel ------------------------------------------------------------------

    async def run(self) -> None:
        """The retry ladder, and every way it can end folded into the outcome."""
        try:
            self.stop_reason = await with_retries(self.attempt, policy=self.deps.policy, on_retry=self.on_retry,
                                                  sleep=self.deps.sleep, agent_retries=self._retries_itself)
            if self.retries:
                self.reply.show(RetryEnded(True, self.retries + 1))
            if self.denied and not self.text.text.strip():
                self.on_event(Notice(wording.TOOL_DENIED, key="denied"))
            if self.item.compact and self.stop_reason == STOP_REASON_END_TURN and not self.compaction_failed:
                self.on_event(CompactionStatus("completed", wording.COMPACTED))
        except asyncio.CancelledError:
            if not self.scope.stopping:  # the relay is shutting down; a restart replays the message
                self.interrupted = True
                raise
            self.stop_reason = STOP_REASON_CANCELLED
            self.reply.show(TurnEnded(STOP_REASON_CANCELLED))
        except (AcpError, AcpRuntimeError) as exc:
            self.failed(exc)
        except LeaseLost:
            raise  # another relay owns the conversation now: not this turn's failure to show
        except Exception as exc:  # the funnel: the traceback is logged here, once
            log.exception("turn in %s failed unexpectedly", self.scope.key)
            self.failure = exc
        finally:
            self.over = True
            if self.ticker is not None:
                self.ticker.cancel()

    def _retries_itself(self) -> bool:
        """This agent retries a failed model call by itself: the ladder must not multiply that."""
        return self.backend in AGENTS_THAT_RETRY

    def _silent(self) -> bool:
        """Nothing but silence so far from an agent that retries in silence."""
        return self._retries_itself() and not self.text.streamed and not self.tool_ran

    def _be_patient(self) -> None:
        """From now on the patience line may have something to say (the agent retries by itself, or
        said it is retrying): keep it up to date. Most turns never get here, and start no task for it."""
        if self.ticker is None and not self.over:
            self.ticker = asyncio.create_task(self._keep_patient(), name="turn-patience")

    async def _keep_patient(self) -> None:
        """Bring the "still retrying" line up to date while the turn runs, every ``PATIENCE_TICK_S``
        since the turn began."""
        await self.deps.sleep(PATIENCE_TICK_S - (time.monotonic() - self.started) % PATIENCE_TICK_S)
        while True:
            if (line := self.patience.tick()) is not None:
                self.reply.show(Notice(line, key=AGENT_RETRY_KEY))
            await self.deps.sleep(PATIENCE_TICK_S)

    def failed(self, exc: AcpError | AcpRuntimeError) -> None:
        """The ladder gave up, or the failure was terminal: the outcome is that failure."""
        if self.retries:
            self.reply.show(RetryEnded(False, self.deps.policy.attempts))
        if (line := self.patience.gave_up()) is not None:
            self.reply.show(Notice(line, key=AGENT_RETRY_KEY))
        self.failure = exc
        log.info("turn in %s failed: %s", self.scope.key, type(exc).__name__)

    # -- one attempt on the retry ladder ---------------------------------------------------

    async def attempt(self, state: Attempt) -> str:
        """Prompt the agent once; returns the stop reason. A lost session is retried once, anew."""
        binding, msg = self.scope.binding, self.msg
        self.current = state
        self.text.reset()
        self.tool_ran = False
        notices: list[Notice] = []
        session = await binding.ensure(notices)
        self.backend = session.runtime.backend
        if self._retries_itself():  # it may retry in silence: the line says so after a while
            self._be_patient()
        if self.cost_mark is None:
            self.cost_mark = binding.cost_mark()
        for notice in notices:
            self.on_event(notice)
        images_ok = session.runtime.accepts_images
        if not images_ok and any(a.kind == "image" for a in msg.attachments):
            self.on_event(Notice(wording.IMAGES_NOT_SUPPORTED, key="images"))
        if skipped := not_sent(msg.attachments):
            self.on_event(Notice(wording.files_not_sent_text(skipped, MAX_FILE_BYTES // 1024), key="files"))
        content = prompt_content(msg, images_ok=images_ok)
        if not content:  # nothing it could read came (a PDF alone): not an empty prompt, the notice is the answer
            return STOP_REASON_END_TURN
        state.reached_agent = True
        timeouts = self.deps.timeouts
        approver = self.approver if self.reply.can_ask else None
        elicitor = self.elicitor if self.reply.can_ask else None
        try:
            stats = await session.prompt(content, on_event=self.on_event,
                                         approver=approver, timeout_s=timeouts.prompt_s,
                                         approval_timeout_s=timeouts.approval_s,
                                         cancel_wait_s=self.deps.cancel_wait_s, elicitor=elicitor)
        except AcpError as exc:
            echoed, shown = self.text.failed(exc, tool_ran=self.tool_ran)
            if echoed:
                # claude-agent-acp and codex-acp stream the error text before the error: that is
                # not an answer, so it does not block a retry, and the person reads it once.
                state.side_effects = False
                self.reply.take_back(echoed)
            for event in shown:  # held text that was an answer after all
                self.reply.show(event)
            if not is_session_lost(exc) or self.lost_once or state.side_effects:
                raise
            self.lost_once = True  # the agent forgot the session: once, on a new one, with a notice
            binding.drop()
            self.on_event(Notice(wording.SESSION_LOST, key="session"))
            return await self.attempt(state)
        if stats.empty and self.last_failure is not None:
            # claude-agent-acp 0.23 answers a prompt retried after a failed model call with an empty
            # end_turn although that call failed again: the failure again, never a silent success.
            raise self.last_failure
        self.stats = stats
        return stats.stop_reason

    async def on_retry(self, state: Attempt, delay: float, exc: BaseException) -> None:
        """One "retrying" event per retry, saying why and when."""
        if isinstance(exc, AcpError | AcpRuntimeError):
            self.last_failure = exc
        self.retries += 1
        self.reply.show(Retrying(state.number, self.deps.policy.attempts, delay, describe(exc, backend=self.backend)))

    # -- what the agent sends --------------------------------------------------------------

    def on_event(self, event: AcpEvent) -> None:
        """Fold an event into the outcome; note what makes a retry (or a replay) unsafe; show it."""
        if isinstance(event, Notice) and event.key == AGENT_RETRY_KEY and event.text:
            event = Notice(self.patience.retrying(), key=AGENT_RETRY_KEY)  # the session's, with the time
            self._be_patient()
        if isinstance(event, TextChunk):
            if event.text.strip() and (line := self.patience.answered()) is not None:
                self.reply.show(Notice(line, key=AGENT_RETRY_KEY))
        elif isinstance(event, ToolCall) and (event.ran or (event.started and self._gate_allows_all())):
            self._tool_may_run(event)
        elif isinstance(event, ToolCall) and event.status == TOOL_STATUS_DENIED:
            self.denied = True
        elif isinstance(event, CompactionStatus) and event.status == "failed":
            self.compaction_failed = True
        elif isinstance(event, TurnEnded):
            self.refusal = event.refusal
        shown = self.text.take(event)
        self.current.side_effects = self.tool_ran or self.text.streamed
        for each in shown:
            self.reply.show(each)

    async def approver(self, request: PermissionRequest) -> str:
        """The tool gate asks: an "allow for this session" choice answers at once, else the person."""
        self.current.side_effects = True  # never retry past an approval request
        approvals, key = self.deps.approvals, self.scope.key
        if approvals.remembered(key, request):
            kind = "allow_once"
        else:
            kind = await self.reply.approve(request)
            if kind == "allow_always":
                approvals.remember(key, request)
        if kind.startswith("allow"):
            self._tool_may_run(request.tool_call)
        return kind

    async def elicitor(self, request: ElicitationRequest) -> dict[str, Any]:
        """The agent asks the person: never retry past a question (it would be asked twice)."""
        self.current.side_effects = True
        return await self.reply.elicit(request)

    def _tool_may_run(self, call: ToolCall) -> None:
        if call.tool_call_id not in self.tools_noted:  # a restart must not run it twice without asking
            self.tools_noted.add(call.tool_call_id)
            try:
                self.deps.journal.tool_may_run(self.msg, call)
            except LeaseLost:
                raise
            except StoreError as exc:  # the store held or full: the turn goes on, as the person approved
                if not self.tool_note_refused:
                    self.tool_note_refused = True
                    log.warning("could not note in the store that a tool may run in %s (a restart before this "
                                "answer ends would send the message to the agent again): %s", self.scope.key, exc)
        self.tool_ran = self.current.side_effects = True

    def _gate_allows_all(self) -> bool:
        session = self.scope.binding.session
        return session is not None and session.runtime.spec.tool_gate == "allow"
