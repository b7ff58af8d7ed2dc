"""Running one turn: session, prompt, retry ladder, rendering, delivery. The error funnel."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from typing import TYPE_CHECKING, Any

from core.acp.client import AcpError, AcpTimeoutError
from core.acp.session_handle import AcpRuntimeError
from core.acp.types import (
    STOP_REASON_CANCELLED,
    STOP_REASON_END_TURN,
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
from core.engine import wording
from core.engine.conversation import Conversation, QueueItem
from core.engine.document import Document
from core.engine.streamer import Streamer
from core.engine.surface import DeliveryError, InboundMessage
from core.failures import _format_acp_error, echoes_error, is_session_lost
from core.retry import Attempt, with_retries

if TYPE_CHECKING:
    from core.engine.engine import Engine

__all__ = ["TurnRunner", "prompt_content"]

log = logging.getLogger("acp_relay.engine.turn")


def prompt_content(message: InboundMessage, *, images_ok: bool = True) -> str | list[dict[str, Any]]:
    """Text plus image attachments as ACP content blocks (images only to agents that take them)."""
    images = [a for a in message.attachments if a.kind == "image" and a.data] if images_ok else []
    if not images:
        return message.text
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    blocks += [{"type": "image", "mimeType": a.mime_type, "data": base64.b64encode(a.data).decode()}
               for a in images]
    return blocks


_TOOL_RAN = frozenset({"in_progress", "completed", "failed"})


class _AttemptOutput:
    """What one attempt produced: the ladder may retry only while this holds no answer."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.tool_ran = False

    def reset(self) -> None:
        self.text.clear()
        self.tool_ran = False

    def joined(self) -> str:
        return "".join(self.text)

    def only_echoes(self, exc: AcpError) -> bool:
        """True when the only thing this attempt produced is the error's own words."""
        return not self.tool_ran and echoes_error(self.joined(), exc)


class TurnRunner:
    """Runs a queued message as a turn and always delivers a final state to the person."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def run(self, conv: Conversation, item: QueueItem) -> None:
        engine = self.engine
        doc = Document()
        started = time.monotonic()
        backend = "generic"
        async with Streamer(conv.surface, conv.key, interval_s=engine.edit_interval(conv.surface),
                            reply_to=item.message.message_id, sleep=engine.sleep) as streamer:
            current = Attempt(0)
            lost_once = False
            compaction_failed = False
            seen = _AttemptOutput()
            msg = item.message

            def tool_may_run() -> None:
                if not seen.tool_ran:  # a replay after a restart must not run it twice
                    engine.store.set_inbound_progress(msg.surface, msg.message_id, "tool")
                seen.tool_ran = current.side_effects = True

            def gate_allows_all() -> bool:
                return conv.session is not None and conv.session.runtime.spec.tool_gate == "allow"

            def on_event(event: AcpEvent) -> None:
                nonlocal compaction_failed
                if isinstance(event, TextChunk):
                    if event.text:
                        seen.text.append(event.text)
                elif isinstance(event, ToolCall) and (event.status in _TOOL_RAN
                                                      or (event.started and gate_allows_all())):
                    tool_may_run()
                elif isinstance(event, CompactionStatus) and event.status == "failed":
                    compaction_failed = True
                elif isinstance(event, KiroMetadata) and event.context_pct is not None:
                    conv.context_pct = event.context_pct
                elif isinstance(event, UsageUpdate) and event.used is not None and event.size:
                    conv.context_pct = 100.0 * event.used / event.size
                current.side_effects = seen.tool_ran or bool(seen.text)
                doc.apply(event)
                streamer.update(doc.to_markdown)  # rendered when the streamer flushes, not per event

            async def approver(request: PermissionRequest) -> str:
                current.side_effects = True  # never retry past an approval request
                try:
                    kind = await engine.ask_approval(conv, request, streamer)
                except DeliveryError as exc:  # the platform's failure, not the agent's
                    log.warning("could not show an approval request in %s: %s", conv.key, exc)
                    on_event(Notice(wording.APPROVAL_NOT_SHOWN, key="approval"))
                    return "cancelled"
                if kind.startswith("allow"):
                    tool_may_run()
                return kind

            async def attempt(state: Attempt) -> str:
                nonlocal current, backend, lost_once
                current = state
                seen.reset()
                notices: list[Notice] = []
                session = await conv.ensure_session(notices)
                backend = session.runtime.backend
                for notice in notices:
                    on_event(notice)
                images_ok = session.runtime.accepts_images
                if not images_ok and any(a.kind == "image" for a in msg.attachments):
                    on_event(Notice(wording.IMAGES_NOT_SUPPORTED, key="images"))
                state.reached_agent = True
                try:
                    stats = await session.prompt(prompt_content(msg, images_ok=images_ok), on_event=on_event,
                                                 approver=approver,
                                                 timeout_s=engine.config.timeouts.prompt_s,
                                                 approval_timeout_s=engine.config.timeouts.approval_s,
                                                 cancel_wait_s=engine.cancel_wait_s)
                except AcpError as exc:
                    if seen.only_echoes(exc):
                        # claude-agent-acp and codex-acp stream the error text before the error:
                        # that is not an answer, so it does not block a retry and is shown once.
                        state.side_effects = False
                        doc.drop_echo(seen.joined())
                    if not is_session_lost(exc) or lost_once or state.side_effects:
                        raise
                    lost_once = True  # the agent forgot the session: once, on a new one, with a notice
                    conv.drop_session()
                    on_event(Notice(wording.SESSION_LOST, key="session"))
                    return await attempt(state)
                return stats.stop_reason

            async def on_retry(state: Attempt, delay: float, exc: BaseException) -> None:
                on_event(Notice(wording.retrying(state.number, engine.policy.attempts), key="retry"))

            try:
                await typing(conv, True)
                stop = await with_retries(attempt, policy=engine.policy, on_retry=on_retry, sleep=engine.sleep)
                if doc.has_notice("retry"):
                    on_event(Notice(wording.RETRY_SUCCEEDED, key="retry"))
                if item.compact and stop == STOP_REASON_END_TURN and not compaction_failed:
                    on_event(CompactionStatus("completed", wording.COMPACTED))
            except asyncio.CancelledError:
                if not conv.stopping:  # the relay is shutting down: say so; a restart replays the message
                    doc.set_partial_note(wording.INTERRUPTED_BY_RESTART)
                    raise
                doc.apply(TurnEnded(STOP_REASON_CANCELLED))
            except (AcpError, AcpRuntimeError) as exc:
                if doc.has_notice("retry"):
                    on_event(Notice(wording.retry_gave_up(engine.policy.attempts), key="retry"))
                prose = _format_acp_error(exc, backend=backend)
                doc.set_error(prose, raw_message=getattr(exc, "message", ""))
                if isinstance(exc, AcpTimeoutError) and exc.partial_output:
                    if not doc.text:
                        doc.apply(TextChunk(exc.partial_output))
                    doc.set_partial_note()  # what streamed stays, marked as incomplete
                log.info("turn in %s failed: %s", conv.key, type(exc).__name__)
            except Exception as exc:  # the funnel: the traceback is logged here, once
                log.exception("turn in %s failed unexpectedly", conv.key)
                doc.set_error(_format_acp_error(exc, backend=backend))
            finally:
                conv.cancellable = False
                doc.finish(time.monotonic() - started, conv.context_pct)
                await typing(conv, False)
                await self._deliver(conv, streamer, doc.to_markdown())

    async def _deliver(self, conv: Conversation, streamer: Streamer, markdown: str) -> None:
        """Flush the final state. If the platform refuses it, keep it in the ledger and say so."""
        try:
            await streamer.finish(markdown)
        except Exception as exc:  # DeliveryError, or a surface bug: either way the answer is kept
            if isinstance(exc, DeliveryError):
                log.warning("could not deliver the answer in %s: %s", conv.key, exc)
            else:
                log.exception("delivering the answer in %s failed unexpectedly", conv.key)
            remainder = streamer.undelivered(markdown)  # what already arrived is not sent twice
            self.engine.store.add_outbound(conv.key, {"surface": conv.surface.name, "text": remainder})
            # Say what happened (a short notice may get through where the answer did not): the
            # agent did answer, so this must never read as an agent failure.
            await self.engine.say(conv.surface, conv.key, wording.delivery_failure_text())
            self.engine.schedule_redelivery()


async def typing(conv: Conversation, active: bool) -> None:
    """The typing indicator is a nicety: a platform error here never fails a turn."""
    if not conv.surface.capabilities.can_typing:
        return
    try:
        await conv.surface.typing(conv.key, active)
    except DeliveryError as exc:
        log.info("typing indicator failed in %s: %s", conv.key, exc)
