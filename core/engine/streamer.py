"""Deliver a growing reply to a surface: post once, then coalesced edits, split at the limit.

One ``Streamer`` per reply. ``update`` is cheap and called on every event; a single owned
background task (alive between ``start`` and ``aclose``, or inside ``async with``) flushes the
latest state at most once per ``interval_s``. ``finish`` stops that task and ALWAYS delivers the
final state, retrying until it is shown or raising ``DeliveryFailed``.

The rendered reply is split at the surface's limit (see ``core.engine.splitter``). Each piece is
one message; a message is edited only when its piece changed, so earlier pieces stay as they are
while the answer grows below them (they are corrected only if the text above changed, e.g. a tool
status line). Delivery rules: ``RateLimited`` -> sleep ``retry_after`` then resend (while
streaming, the next flush carries the newer state); ``MarkupRejected`` -> resend as plain text;
``MessageTooLong`` -> re-split with a smaller limit; ``NotModified`` -> fine; ``DeliveryFailed``
-> skipped while streaming, retried with backoff on the final state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import TypeVar

from core.engine import wording
from core.engine.splitter import plain_text, split_rendered
from core.engine.surface import (
    Button,
    DeliveryError,
    DeliveryFailed,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    RateLimited,
    Surface,
)
from core.redact import redact, unfinished_secret_at

__all__ = ["Streamer"]

_DEFAULT_INTERVAL_S = 1.0  # a surface that names no interval, used outside an engine
log = logging.getLogger("acp_relay.engine.streamer")

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

#: Consecutive 429s tolerated for one call before the delivery counts as failed.
_MAX_RATE_LIMIT_WAITS = 20
#: ``MessageTooLong`` shrinks the limit by this factor, down to ``_MIN_LIMIT``.
_SHRINK = 0.8
_MIN_LIMIT = 32


@dataclass(slots=True)
class _Sent:
    message_id: str
    text: str | None  # what the message shows; None = unknown (a message we were asked to edit)
    plain: bool = False
    buttons: tuple[Button, ...] = ()


@dataclass(slots=True)
class _Thread:
    """The messages that together show one text (a streamed reply or a standalone message)."""

    sent: list[_Sent] = field(default_factory=list)
    plain: bool = False
    reply_to: str | None = None


class _Deferred(Exception):
    """A streaming flush was rate limited; the next flush sends the newer state."""


class Streamer:
    """Streams one reply into ``conversation_key`` on ``surface``. ``calls`` counts platform calls."""

    def __init__(self, surface: Surface, conversation_key: str, *, interval_s: float | None = None,
                 reply_to: str | None = None, sleep: Sleep = asyncio.sleep, max_attempts: int = 5) -> None:
        caps = surface.capabilities
        self.surface = surface
        self.conversation_key = conversation_key
        chosen = caps.edit_interval_s if interval_s is None else interval_s
        self.interval_s = _DEFAULT_INTERVAL_S if chosen is None else chosen
        self.calls = 0
        self._sleep = sleep
        self._max_attempts = max(1, max_attempts)
        self._limit = caps.max_message_length
        self._stream = _Thread(reply_to=reply_to)
        self._latest: str | Callable[[], str] = ""
        self._redacted: dict[str, str] = {}  # paragraph -> redacted, for the streaming flushes
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._finished = False

    @property
    def message_ids(self) -> list[str]:
        """Ids of the messages the reply occupies so far, in order."""
        return [s.message_id for s in self._stream.sent]

    async def start(self) -> None:
        """Start the flusher (not needed, and not started, when the surface cannot edit)."""
        if self._task is None and not self._finished and self.surface.capabilities.can_edit:
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

    def update(self, markdown: str | Callable[[], str]) -> None:
        """Record the reply's latest state; the flusher shows it at the next tick. Never blocks.

        A callable is rendered only when the flusher runs (about once per interval), not on every
        event that changed the reply.
        """
        if not self._finished:
            self._latest = markdown
            self._wake.set()

    async def finish(self, markdown: str, buttons: tuple[Button, ...] = ()) -> list[str]:
        """Deliver the final state (buttons on the last piece); returns the message ids.

        Raises ``DeliveryFailed`` only when the final state could not be shown after
        ``max_attempts`` attempts.
        """
        self._finished = True
        self._latest = markdown
        await self._stop()
        async with self._lock:
            self._stream.plain = False  # a markup rejected mid-stream may parse now (closed fences)
            await self._deliver(self._stream, markdown, buttons)
        return self.message_ids

    async def post(self, markdown: str, buttons: tuple[Button, ...] = ()) -> str:
        """Send a standalone message (approval, notice); returns the id of its (last) message."""
        thread = _Thread()
        await self._deliver(thread, markdown, buttons)
        return thread.sent[-1].message_id

    async def edit_message(self, message_id: str, markdown: str, buttons: tuple[Button, ...] = ()) -> str:
        """Replace a standalone message's content; returns the id now showing it.

        Where the surface cannot edit, the new content is posted as a new message instead.
        """
        can_edit = self.surface.capabilities.can_edit
        thread = _Thread(sent=[_Sent(message_id, None)] if can_edit else [])
        await self._deliver(thread, markdown, buttons)
        return thread.sent[-1].message_id

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            async with self._lock:
                latest = self._latest() if callable(self._latest) else self._latest
                try:
                    await self._sync(self._stream, latest, (), final=False)
                except _Deferred:
                    self._wake.set()
                except DeliveryError as exc:
                    log.warning("streaming update to %s not delivered: %r", self.conversation_key, exc)
                    self._wake.set()
            await self._sleep(self.interval_s)

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

    async def _deliver(self, thread: _Thread, markdown: str, buttons: tuple[Button, ...]) -> None:
        failure: DeliveryError | None = None
        for attempt in range(self._max_attempts):
            if attempt:
                await self._sleep(min(0.5 * 2 ** (attempt - 1), 8.0))
            try:
                await self._sync(thread, markdown, buttons, final=True)
                return
            except DeliveryFailed as exc:
                failure = exc
                log.warning("delivery to %s failed (attempt %d of %d): %r", self.conversation_key,
                            attempt + 1, self._max_attempts, exc)
        raise DeliveryFailed(f"not delivered after {self._max_attempts} attempts") from failure

    async def _sync(self, thread: _Thread, markdown: str, buttons: tuple[Button, ...], *,
                    final: bool) -> None:
        while True:
            try:
                await self._sync_once(thread, markdown, buttons, final=final)
                return
            except MarkupRejected as exc:
                if thread.plain:
                    raise DeliveryFailed("plain text rejected") from exc
                thread.plain = True
            except MessageTooLong as exc:
                smaller = int(self._limit * _SHRINK)
                if smaller < _MIN_LIMIT:
                    raise DeliveryFailed("rejected as too long at every size") from exc
                self._limit = smaller

    def undelivered(self, markdown: str) -> str:
        """What of ``markdown`` the platform does not show yet: the pieces from the first one that
        is missing or stale. The outbound ledger keeps this, so a redelivery repeats nothing."""
        pieces = self._pieces(markdown, self._stream.plain)
        shown = 0
        for have, piece in zip(self._stream.sent, pieces, strict=False):
            if have.text != piece:
                break
            shown += 1
        return "\n\n".join(pieces[shown:])

    def _redact(self, markdown: str, final: bool) -> str:
        """Every text bound for a platform passes here: no secret reaches a chat.

        While streaming only the last paragraph changes, so paragraphs are redacted once and
        remembered (a long answer would otherwise be scanned whole on every flush); the final
        state is scanned whole, so nothing that spans a paragraph break slips through.
        """
        if final:
            return redact(markdown)
        cut = unfinished_secret_at(markdown)  # a token still arriving: shown once it is whole (redacted)
        if cut is not None:
            markdown = markdown[:cut]
        known, self._redacted = self._redacted, {}
        for block in markdown.split("\n\n"):
            self._redacted[block] = known.get(block) or redact(block)
        return "\n\n".join(self._redacted[block] for block in markdown.split("\n\n"))

    def _pieces(self, markdown: str, plain: bool, final: bool = True) -> list[str]:
        markdown = self._redact(markdown, final)
        unit = self.surface.capabilities.length_unit
        if plain:
            return split_rendered(plain_text(markdown), lambda s: s, self._limit, unit)
        return split_rendered(markdown, self.surface.render, self._limit, unit)

    async def _sync_once(self, thread: _Thread, markdown: str, buttons: tuple[Button, ...], *,
                         final: bool) -> None:
        pieces = self._pieces(markdown, thread.plain, final)
        if not pieces:
            if not final:
                return
            pieces = [wording.EMPTY_ANSWER]
        key, plain = self.conversation_key, thread.plain
        for i, piece in enumerate(pieces):
            btns = buttons if i == len(pieces) - 1 else ()
            if i < len(thread.sent):
                have = thread.sent[i]
                if (have.text, have.plain, have.buttons) != (piece, plain, btns):
                    await self._edit(have.message_id, piece, btns, plain, final)
                    thread.sent[i] = _Sent(have.message_id, piece, plain, btns)
                continue
            reply_to = thread.reply_to if i == 0 else None
            mid = await self._call(partial(self.surface.send, key, piece, buttons=btns, plain=plain,
                                           reply_to=reply_to), final)
            thread.sent.append(_Sent(mid, piece, plain, btns))
        while len(thread.sent) > len(pieces):  # the reply got shorter (an echo was removed)
            extra = thread.sent[-1]
            if self.surface.capabilities.can_delete:
                await self._call(partial(self.surface.delete, key, extra.message_id), final)
            else:
                await self._edit(extra.message_id, wording.MERGED_ABOVE, (), True, final)
            thread.sent.pop()

    async def _edit(self, message_id: str, text: str, buttons: tuple[Button, ...], plain: bool,
                    final: bool) -> None:
        try:
            await self._call(partial(self.surface.edit, self.conversation_key, message_id, text,
                                     buttons=buttons, plain=plain), final)
        except NotModified:
            pass  # the message already shows this text

    async def _call(self, op: Callable[[], Awaitable[T]], final: bool) -> T:
        waits = 0
        while True:
            self.calls += 1
            try:
                return await op()
            except RateLimited as exc:
                waits += 1
                if waits > _MAX_RATE_LIMIT_WAITS:
                    raise DeliveryFailed("still rate limited") from exc
                await self._sleep(max(0.0, exc.retry_after_s))
                if not final:
                    raise _Deferred from exc
