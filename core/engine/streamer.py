"""Deliver a growing reply to a surface: post once, then coalesced edits, split at the limit.

One ``Streamer`` per reply. ``update`` is cheap and called on every event; a single owned
background task (alive between ``start`` and ``aclose``, or inside ``async with``) flushes the
latest state at most once per ``interval_s``. ``finish`` stops that task and ALWAYS delivers the
final state, retrying until it is shown or raising a ``DeliveryError``. The first flush is made at
once; while the relay is saturated (a burst: its timers fire late), later ones wait on, up to
``SATURATED_HOLD_S``, so that other conversations' first words go first.

A reply is a list of PARTS (``Document.parts``: each a tuple of ``core.engine.blocks``; a string is
one ``Text`` block); each part is shown in its own messages, below the part before it. Each part is
split at the surface's limit by the length its formatter reports (see ``core.engine.pieces``), one
message per piece, and the piece is delivered as the formatter rendered it; a message is edited
only when its piece changed, so earlier pieces stay as they are while the answer grows below them.
The streamer of an answer holds its message's ``origin`` and hands it back to the surface
(``capabilities_for``, ``stream``). ``live_buttons`` (an answer's Stop button) ride on the message
being written while the reply streams, never on a native stream, and are gone from the final state.

Where the conversation can stream natively (``Capabilities.can_stream_natively``), the piece being
written is a native stream (a Telegram draft, a Slack stream) instead of a message edited again and
again; a stream that is complete is ended, and becomes an ordinary message. A failing stream call
falls back to send + edit for the rest of the reply. A send whose answer could not be read
(``AnswerUnreadable``: the message may be shown, its id is unknown) counts as shown; when that piece
must change, a note below it says so and the piece is sent again in full, never an unmarked second
copy. A message (or stream) older than
``rollover_after_s`` is left as it is: ``rollover_due`` tells the reply's owner to start a new part,
so the reply continues in a new message.

With a ``ReplyLog``, every message (and native stream) the reply occupies is noted as it is created
(before the streamer goes on: the store writes the notes of one round of the loop together) or
removed. ``resume`` takes such a log from a relay that was killed mid-reply: the reply is
then written into those messages (they are edited, and the ones it no longer needs are removed once
it is complete) instead of below them as a second copy.

Every call goes through the chat's ``Pacer`` slot (``calls.Caller``). Delivery rules: ``RateLimited`` -> the chat is
held for ``retry_after`` then the call is made again (while streaming, the next flush carries the
newer state); ``MarkupRejected`` -> resend as plain text; ``MessageTooLong`` -> re-split with a
smaller limit; ``NotModified`` -> fine; ``DeliveryFailed`` -> skipped while streaming, retried with
backoff on the final state; ``DeliveryRefused`` -> raised at once (the chat will never take it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from types import TracebackType
from typing import TypeVar

from core.engine import wording
from core.engine.blocks import Part, Text
from core.engine.calls import Caller, Fence
from core.engine.messages import InboundMessage
from core.engine.pacing import Pacer
from core.engine.pieces import Pieces
from core.engine.resuming import Resuming
from core.engine.saturation import wait_out
from core.engine.streamed import Deferred, LiveStream, Piece, ReplyLog, Sent, Thread
from core.engine.surface import (
    AnswerUnreadable,
    Button,
    DeliveryError,
    DeliveryFailed,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    Surface,
)
from core.store import LeaseLost

__all__ = ["SATURATED_HOLD_S", "Content", "Reply", "Streamer", "as_part", "as_parts"]

_DEFAULT_INTERVAL_S = 1.0  # a surface that names no interval, used outside an engine
#: While the relay is saturated (a burst), the next update of a reply already showing waits on, at most
#: this long after the last one (``core.engine.saturation``): made then, it would queue ahead of other
#: conversations' first words. The final state never waits (``finish`` stops the flusher).
SATURATED_HOLD_S = 2.0
log = logging.getLogger("acp_relay.engine.streamer")

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
#: One message: its blocks, or Markdown (one ``Text`` block).
Content = str | Part
#: One text, or the parts of a reply (each shown below the one before), each its blocks or Markdown.
Reply = str | Sequence[Content]


def as_part(content: Content) -> Part:
    """``content`` as blocks (Markdown is one ``Text`` block)."""
    return (Text(content),) if isinstance(content, str) else content


def as_parts(reply: Reply) -> list[Part]:
    """``reply`` as its parts' blocks."""
    return [as_part(reply)] if isinstance(reply, str) else [as_part(c) for c in reply]


class Streamer(Resuming):
    """Streams one reply into ``conversation_key`` on ``surface``. ``calls`` counts platform calls."""

    def __init__(self, surface: Surface, conversation_key: str, *, interval_s: float | None = None,
                 reply_to: str | None = None, origin: object | None = None, sleep: Sleep = asyncio.sleep,
                 max_attempts: int = 5, pacer: Pacer | None = None, clock: Callable[[], float] = time.monotonic,
                 log: ReplyLog | None = None, fence: Fence | None = None) -> None:
        caps = surface.capabilities_for(conversation_key, origin)
        self.surface = surface
        self.conversation_key = conversation_key
        self.capabilities = caps
        chosen = caps.edit_interval_s if interval_s is None else interval_s
        self.interval_s = _DEFAULT_INTERVAL_S if chosen is None else chosen
        self._sleep = sleep
        self._clock = clock
        self._caller = Caller(pacer if pacer is not None else Pacer(sleep=sleep, clock=clock),
                              surface.rate_key(conversation_key), caps.rate_limit, sleep=sleep,
                              max_attempts=max_attempts, conversation_key=conversation_key, fence=fence)
        self._pieces = Pieces(surface.formatter, caps.max_message_length)
        self._reply_to = reply_to
        self._origin = origin
        self._threads: list[Thread] = []
        self._native = caps.can_stream_natively
        self._latest: Reply | Callable[[], Reply] = ""
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        self._log = log
        #: Buttons under the message being written while the reply streams (a Stop button), gone
        #: from it once the reply is final or has moved on below it; never on a native stream.
        self.live_buttons: tuple[Button, ...] = ()

    @property
    def calls(self) -> int:
        """Platform calls made so far (failed ones included)."""
        return self._caller.count

    @property
    def shown(self) -> bool:
        """This run has put some of the reply on the platform (a message, or a native stream)."""
        return any(t.stream is not None or any(not s.resumed for s in t.sent) for t in self._threads)

    @property
    def message_ids(self) -> list[str]:
        """Ids of the messages the reply occupies so far, in order (those whose id is unknown left out)."""
        return [s.message_id for t in self._threads for s in t.sent if s.message_id]

    async def start(self) -> None:
        """Start the flusher (not needed, and not started, when the surface cannot edit)."""
        if self._task is None and not self._finished and (self.capabilities.can_edit or self._native):
            self._task = asyncio.create_task(self._run(), name=f"streamer:{self.conversation_key}")

    async def aclose(self) -> None:
        """Stop the flusher without delivering anything more (``finish`` is what delivers)."""
        await self._stop()

    async def __aenter__(self) -> Streamer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def update(self, reply: Reply | Callable[[], Reply]) -> None:
        """Record the reply's latest state; the flusher shows it at the next tick. Never blocks.

        A callable is rendered only when the flusher runs (about once per interval), not on every
        event that changed the reply.
        """
        if not self._finished:
            self._latest = reply
            self._wake.set()

    async def flush(self, reply: Reply) -> None:
        """Show ``reply`` now as ordinary messages, native streams ended: something is about to be
        posted below it (an approval prompt), and a stream would otherwise stay below that."""
        async with self._lock:
            try:
                await self._sync(as_parts(reply), self.live_buttons, final=False, settle=True)
            except Deferred:
                pass  # the chat is held for retry_after; what is posted next waits for it too
            except DeliveryError as exc:  # the final state is delivered by ``finish`` all the same
                log.warning("showing the reply so far in %s failed: %r", self.conversation_key, exc)

    async def finish(self, reply: Reply, buttons: tuple[Button, ...] = ()) -> list[str]:
        """Deliver the final state (buttons on the last piece); returns the message ids.

        Raises ``DeliveryFailed`` when the final state could not be shown after ``max_attempts``
        attempts, ``DeliveryRefused`` when the chat will never take it.
        """
        self._finished = True
        self._latest = reply
        await self._stop()
        async with self._lock:
            for thread in self._threads:
                thread.plain = False  # a markup rejected mid-stream may parse now (closed fences)
            await self._deliver(as_parts(reply), buttons)
        return self.message_ids

    async def post(self, content: Content, buttons: tuple[Button, ...] = (), *,
                   answering: InboundMessage | None = None, private: bool = False, reply_to: str | None = None) -> str:
        """Send a standalone message (approval, notice); returns the id of its (last) message.

        With ``answering``, its first piece answers that inbound message (``Surface.reply``); with
        ``reply_to``, it is a reply to that message where the platform has replies.
        """
        thread = Thread(answering=answering, private=private, reply_to=reply_to)
        await self._deliver_thread(thread, as_part(content), buttons)
        return thread.sent[-1].message_id

    async def send_file(self, name: str, data: bytes, *, caption: str, fallback: str) -> str:
        """Post a file below the reply (paced, 429s waited out, retried like a final state)."""
        op = partial(self.surface.send_file, self.conversation_key, name, data, reply_to=self._reply_to,
                     caption=self._pieces.one(as_part(caption)).shown,
                     fallback=self._pieces.one(as_part(fallback)).shown)
        posted: list[str] = []

        async def once() -> None:
            posted.append(await self._caller.call(op, True))

        await self._caller.attempts(once)
        return posted[-1]

    async def edit_message(self, message_id: str, content: Content, buttons: tuple[Button, ...] = ()) -> str:
        """Replace a standalone message's content; returns the id now showing it.

        Where the surface cannot edit, the new content is posted as a new message instead.
        """
        can_edit = self.capabilities.can_edit
        thread = Thread(sent=[Sent(message_id, None)] if can_edit else [])
        await self._deliver_thread(thread, as_part(content), buttons)
        return thread.sent[-1].message_id

    def undelivered(self, reply: Reply) -> list[Piece]:
        """What of ``reply`` the platform does not show yet: in each part, the pieces from the first
        one that is missing or stale. The outbound ledger keeps this, so a redelivery repeats nothing."""
        missing: list[Piece] = []
        for i, part in enumerate(as_parts(reply)):
            thread = self._threads[i] if i < len(self._threads) else Thread()
            pieces = self._pieces.of(thread, part)
            shown = 0
            for have, piece in zip(thread.sent, pieces, strict=False):
                if have.text != piece.text:
                    break
                shown += 1
            missing += pieces[shown:]
        return missing

    # -- the flusher -----------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            began = self._clock()
            async with self._lock:
                latest = self._latest() if callable(self._latest) else self._latest
                try:
                    await self._sync(as_parts(latest), self.live_buttons, final=False)
                except Deferred:
                    self._wake.set()
                    continue  # the chat is held for retry_after: the next flush waits in the pacer
                except DeliveryError as exc:
                    log.warning("streaming update to %s not delivered: %r", self.conversation_key, exc)
                    self._wake.set()
                except LeaseLost:
                    return  # another relay owns the conversation now: nothing more is shown from here
            pause = self._pause_after(self._clock() - began)
            if self.shown:  # its first words are out: while the relay is saturated, others' go first
                await wait_out(self._sleep, self._clock, pause, max(pause, SATURATED_HOLD_S))
            else:
                await self._sleep(pause)

    def _pause_after(self, took: float) -> float:
        """How long the flusher waits after a flush that took ``took`` (its calls, their slots).

        Flushes start one interval apart: a quick call's time is part of the interval, so the text shown
        is never more than one interval behind the answer. A call slower than half the interval says
        the platform (or this relay, in a burst) is loaded: the next flush then waits as long as it took,
        at most one interval, so a struggling chat is not edited back to back."""
        interval = self.interval_s
        return max(interval - took, min(took, interval))

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        async with self._lock:  # never interrupt a call in flight: a posted message's id would be lost
            task.cancel()
            await asyncio.wait([task])
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise error  # the flusher died of a bug: surface it, never swallow it

    def rollover_due(self, parts: int) -> bool:
        """True when the message being written (or its native stream) has been edited for
        ``rollover_after_s``: what comes next belongs in a new part. ``parts`` is how many parts the
        reply has now (a part not shown yet is not due)."""
        after = self.capabilities.rollover_after_s
        if after is None or not self._threads or parts > len(self._threads):
            return False
        last = self._threads[-1]
        since = last.stream.started_at if last.stream else (last.sent[-1].at if last.sent else None)
        return since is not None and self._clock() - since >= after

    # -- delivering ------------------------------------------------------------------------

    async def _deliver(self, parts: list[Part], buttons: tuple[Button, ...]) -> None:
        await self._caller.attempts(partial(self._sync, parts, buttons, final=True))

    async def _deliver_thread(self, thread: Thread, part: Part, buttons: tuple[Button, ...]) -> None:
        await self._caller.attempts(partial(self._sync_thread, thread, part, buttons, final=True))

    async def _sync(self, parts: list[Part], buttons: tuple[Button, ...], *, final: bool,
                    settle: bool = False) -> None:
        while len(self._threads) < len(parts):
            self._threads.append(self._reply_thread())
        last = len(parts) - 1
        tidy = final or settle  # resumed messages the reply does not need go now: nothing may stay above
        for i, part in enumerate(parts):
            live = self._native and not final and i == last and not settle
            await self._sync_thread(self._threads[i], part, buttons if i == last else (), final=final,
                                    live=live, may_be_empty=i < last, tidy=tidy)
        if tidy:
            for thread in self._threads[len(parts):]:  # parts of the interrupted reply this one never reached
                await self._trim(thread, 0, final, tidy=True)

    async def _sync_thread(self, thread: Thread, part: Part, buttons: tuple[Button, ...], *,
                           final: bool, live: bool = False, may_be_empty: bool = False, tidy: bool = True) -> None:
        while True:
            try:
                await self._sync_once(thread, part, buttons, final=final, live=live,
                                      may_be_empty=may_be_empty, tidy=tidy)
                return
            except MarkupRejected as exc:
                if thread.plain:
                    raise DeliveryFailed("plain text rejected") from exc
                thread.plain = True
            except MessageTooLong as exc:
                if not self._pieces.shrink():
                    raise DeliveryFailed("rejected as too long at every size") from exc

    async def _sync_once(self, thread: Thread, part: Part, buttons: tuple[Button, ...], *,
                         final: bool, live: bool, may_be_empty: bool, tidy: bool) -> None:
        pieces = self._pieces.of(thread, part, final=final)
        if pieces is thread.settled and not buttons:
            return  # a part that stopped growing, shown as it is: nothing to look at
        if not pieces:
            if not final or may_be_empty:
                await self._end_stream(thread, None, final)
                await self._trim(thread, 0, final, tidy)
                return  # an empty part shows nothing (the last one always has its footer)
            pieces = [self._pieces.one((Text(wording.EMPTY_ANSWER),), plain=thread.plain)]
        if live and thread.stream is None and len(pieces) <= len(thread.sent):
            live = False  # the piece being written is already an ordinary message: keep editing it
        ordinary = pieces[:-1] if live else pieces
        if thread.stream is not None and (not live or len(thread.sent) < len(ordinary)):
            # The streamed piece is complete (or streaming ends here): it becomes an ordinary message.
            at = len(thread.sent)
            await self._end_stream(thread, pieces[at] if at < len(pieces) else None, final)
        # While the last piece is a native stream, the messages above it are complete: no live buttons.
        await self._sync_ordinary(thread, ordinary, () if live else buttons, final, tidy)
        if live:
            if not await self._stream_piece(thread, pieces[-1], final):
                # The stream was refused: its piece is an ordinary message now, not at the next update
                # (the agent may be quiet for long, running a tool, and the words so far would wait).
                await self._sync_ordinary(thread, pieces, buttons, final, tidy)
        elif not buttons and thread.stream is None and len(thread.sent) == len(pieces):
            thread.settled = pieces

    async def _sync_ordinary(self, thread: Thread, pieces: list[Piece], buttons: tuple[Button, ...],
                             final: bool, tidy: bool = True) -> None:
        plain = thread.plain
        for i, piece in enumerate(pieces):
            btns = buttons if i == len(pieces) - 1 else ()
            if i < len(thread.sent):
                have = thread.sent[i]
                if (have.text, have.plain, have.buttons) != (piece.text, plain, btns):
                    if not have.message_id:  # shown, but its id is unknown: a marked copy below it
                        await self._send_piece(thread, i, piece, btns, final, note=True)
                        continue
                    await self._edit(have.message_id, piece, btns, final)
                    thread.sent[i] = Sent(have.message_id, piece.text, plain, btns, have.at)
                continue
            await self._clear_below(thread, final)
            await self._send_piece(thread, i, piece, btns, final)
        await self._trim(thread, len(pieces), final, tidy)

    async def _send_piece(self, thread: Thread, i: int, piece: Piece, btns: tuple[Button, ...], final: bool,
                          *, note: bool = False) -> None:
        """Post piece ``i`` as a new message (``note``: below the note that the one showing it cannot be
        updated). A send whose answer cannot be read is taken as shown, its id unknown (never logged)."""
        key, plain, shown = self.conversation_key, thread.plain, piece.shown
        if note:
            unaddressable = self._pieces.one((Text(wording.UNADDRESSABLE_NOTE),), plain=True).shown
            await self._caller.call(partial(self.surface.send, key, unaddressable), final, unreadable="")
        first = i == 0 and not note
        if first and thread.answering is not None:
            op = partial(self.surface.reply, thread.answering, shown, buttons=btns, private=thread.private)
        elif thread.part is not None and self._reply_to is not None and not note:  # a piece of an answer: once
            op = partial(self.surface.send_once, key, shown, buttons=btns,
                         reply_to=thread.reply_to if first else None, key=f"{key}|{self._reply_to}|{thread.part}|{i}")
        else:
            op = partial(self.surface.send, key, shown, buttons=btns, reply_to=thread.reply_to if first else None)
        mid = await self._caller.call(op, final, unreadable="")
        sent = Sent(mid, piece.text, plain, btns, self._clock())
        if i < len(thread.sent):
            thread.sent[i] = sent
        else:
            thread.sent.append(sent)
        if mid:
            await self._posted(thread, i, mid)

    async def _clear_below(self, thread: Thread, final: bool) -> None:
        """A part grows past the messages it had before a restart: the interrupted later parts below
        it go (they are written again below it), so the reply keeps its order."""
        if thread.part is None:
            return
        for later in self._threads[thread.part + 1:]:
            if later.sent and all(s.resumed for s in later.sent):  # never what this run wrote there
                await self._trim(later, 0, final, tidy=True)

    async def _trim(self, thread: Thread, keep: int, final: bool, tidy: bool) -> None:
        """Remove the messages past the first ``keep``: the reply got shorter (an echo was removed), or
        it is complete (``tidy``) and needs fewer of the messages a killed relay had posted."""
        while len(thread.sent) > keep and (tidy or not thread.sent[-1].resumed):
            extra = thread.sent[-1]
            if not extra.message_id:
                pass  # a message whose id is unknown cannot be changed
            elif self.capabilities.can_delete:
                await self._caller.call(partial(self.surface.delete, self.conversation_key, extra.message_id), final,
                                        unreadable=None)  # taken: deleted, whatever its answer said
            else:
                await self._edit(extra.message_id, self._pieces.one((Text(wording.MERGED_ABOVE),), plain=True), (),
                                 final)
            thread.sent.pop()
            self._removed(thread, len(thread.sent))

    async def _stream_piece(self, thread: Thread, piece: Piece, final: bool) -> bool:
        """Show ``piece`` in the thread's native stream; False when streaming failed and nothing shows it."""
        stream = thread.stream
        if stream is not None and stream.piece.text == piece.text:
            return True
        reply_to = thread.reply_to if not thread.sent else None
        try:
            stream_id = await self._caller.call(partial(self.surface.stream, self.conversation_key,
                                                 stream.stream_id if stream else None, piece.shown,
                                                 reply_to=reply_to, origin=self._origin), final)
        except (DeliveryFailed, MarkupRejected, MessageTooLong) as exc:
            log.info("native streaming in %s failed, sending and editing instead: %r", self.conversation_key, exc)
            self._native = False
            await self._end_stream(thread, None, final)
            return False
        except AnswerUnreadable as exc:  # a stream may be showing the piece, with no id to end it by
            log.warning("%s: a native stream started but its answer could not be read; sending and editing "
                        "instead (%s)", self.conversation_key, exc)
            self._native = False
            if stream is None:
                thread.sent.append(Sent("", piece.text, thread.plain, (), self._clock()))
            return True
        if stream is None:
            thread.stream = LiveStream(stream_id, piece, self._clock())
            await self._posted(thread, len(thread.sent), stream_id, "stream")
        else:
            stream.piece = piece
        return True

    async def _end_stream(self, thread: Thread, piece: Piece | None, final: bool) -> None:
        """End the thread's native stream; its piece is then an ordinary message (sent here where
        the stream was only a preview). ``piece`` None: whatever the stream shows last."""
        stream, thread.stream = thread.stream, None
        if stream is None:
            return
        last = stream.piece if piece is None else piece
        try:
            mid = await self._caller.call(partial(self.surface.end_stream, self.conversation_key, stream.stream_id,
                                           last.shown), final)
        except DeliveryFailed as exc:  # the stream is gone; its piece is sent as an ordinary message
            log.info("ending a native stream in %s failed: %r", self.conversation_key, exc)
            mid = None
        if mid is not None:
            thread.sent.append(Sent(mid, last.text, False, (), stream.started_at))
            await self._posted(thread, len(thread.sent) - 1, mid)
        else:
            self._removed(thread, len(thread.sent))  # a preview: the piece is posted as a message, if at all

    async def _edit(self, message_id: str, piece: Piece, buttons: tuple[Button, ...], final: bool) -> None:
        try:
            await self._caller.call(partial(self.surface.edit, self.conversation_key, message_id, piece.shown,
                                     buttons=buttons), final, unreadable=None)  # taken as done
        except NotModified:
            pass  # the message already shows this text
