"""Continuing a reply that a killed relay had begun: the part of a ``Streamer`` that adopts (or, where
messages cannot be edited, retires) the messages its ``ReplyLog`` recorded, and keeps that log."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial

from core.engine import wording
from core.engine.blocks import Part, Text
from core.engine.calls import Caller
from core.engine.messages import Button
from core.engine.pieces import Pieces
from core.engine.streamed import Posted, ReplyLog, Sent, Thread
from core.engine.surface import Capabilities, DeliveryError, DeliveryFailed, DeliveryRefused, Surface
from core.store import LeaseLost, StoreError

__all__ = ["Resuming"]

log = logging.getLogger("acp_relay.engine.streamer")


class Resuming:
    """Mixed into ``Streamer``: what it needs of the streamer is declared here."""

    surface: Surface
    conversation_key: str
    capabilities: Capabilities
    _threads: list[Thread]
    _caller: Caller
    _clock: Callable[[], float]
    _log: ReplyLog | None
    _reply_to: str | None
    _pieces: Pieces
    #: A note in the ``ReplyLog`` was refused by the store (said once in the log).
    _log_refused: bool = False

    async def _deliver_thread(self, thread: Thread, part: Part, buttons: tuple[Button, ...]) -> None:
        raise NotImplementedError  # the streamer's

    async def resume(self, previous: Sequence[Posted]) -> None:
        """Continue a reply that a killed relay had begun in ``previous`` (its ``ReplyLog``).

        The reply is written into those messages. A native stream this process cannot continue is
        ended showing ``wording.INTERRUPTED_RESUMING`` and then edited like a message; a preview (a
        Telegram draft) leaves nothing to continue. Where messages cannot be edited they are deleted
        before the reply is posted again, or, where that is impossible too, the last one is answered
        with ``INTERRUPTED_RESUMING``: never a silent second copy.
        """
        if not previous or self._threads:
            return
        try:
            if self.capabilities.can_edit:
                await self._adopt(sorted(previous, key=lambda e: (e.part, e.piece)))
            else:
                await self._retire(previous)
        except DeliveryRefused as exc:  # ``finish`` raises it again; the outbox says what happens then
            log.warning("%s will not take messages in %s: %r", self.surface.name, self.conversation_key, exc)

    async def _adopt(self, previous: list[Posted]) -> None:
        for entry in previous:
            while len(self._threads) <= entry.part:
                self._threads.append(self._reply_thread())
            thread = self._threads[entry.part]
            mid: str | None = entry.message_id
            text: str | None = None
            if entry.kind == "stream":
                mid, text = await self._end_foreign_stream(entry.message_id), wording.INTERRUPTED_RESUMING
            if mid is None or len(thread.sent) != entry.piece:
                self._removed(thread, entry.piece)
            if mid is not None:
                thread.sent.append(Sent(mid, text, at=self._clock(), resumed=True))
                if len(thread.sent) - 1 != entry.piece or mid != entry.message_id or entry.kind == "stream":
                    await self._posted(thread, len(thread.sent) - 1, mid)

    async def _end_foreign_stream(self, stream_id: str) -> str | None:
        """End a stream a killed relay started; the id of the message now showing it, if any."""
        interrupted = self._pieces.one((Text(wording.INTERRUPTED_RESUMING),)).shown
        try:
            return await self._caller.call(partial(self.surface.end_stream, self.conversation_key, stream_id,
                                            interrupted), True)
        except DeliveryRefused:
            raise
        except DeliveryError as exc:  # still streaming, perhaps: edits will say; never a silent copy
            log.info("ending an interrupted stream in %s failed: %r", self.conversation_key, exc)
            return stream_id

    async def _retire(self, previous: Sequence[Posted]) -> None:
        """No edits here: remove the cut-off reply, or mark it, before the reply is posted again."""
        shown = [e for e in previous if e.kind == "message"]
        if shown and self.capabilities.can_delete:
            for entry in shown:
                try:
                    await self._caller.call(partial(self.surface.delete, self.conversation_key, entry.message_id), True)
                except DeliveryFailed as exc:
                    log.info("removing an interrupted reply's message in %s failed: %r", self.conversation_key, exc)
        elif shown:
            await self._deliver_thread(Thread(reply_to=shown[-1].message_id), (Text(wording.INTERRUPTED_RESUMING),), ())
        if self._log is not None:
            for entry in previous:
                self._log.removed(entry.part, entry.piece)

    def _reply_thread(self) -> Thread:
        return Thread(reply_to=None if self._threads else self._reply_to, part=len(self._threads))

    async def _posted(self, thread: Thread, piece: int, message_id: str, kind: str = "message") -> None:
        if self._log is not None and thread.part is not None:
            entry = Posted(thread.part, piece, message_id, "stream" if kind == "stream" else "message")
            try:
                await self._log.posted(entry)
            except LeaseLost:
                raise
            except StoreError as exc:
                self._unlogged(exc)

    def _removed(self, thread: Thread, piece: int) -> None:
        if self._log is not None and thread.part is not None:
            try:
                self._log.removed(thread.part, piece)
            except LeaseLost:
                raise
            except StoreError as exc:
                self._unlogged(exc)

    def _unlogged(self, exc: StoreError) -> None:
        """The store refused a note of where the reply is shown (a full disk, the database held or away):
        the reply goes on, since the person is owed it; only a restart before it ends would not find
        what it had shown. Said once a reply, in the log."""
        if not self._log_refused:
            self._log_refused = True
            log.warning("could not note where the answer in %s is shown; it goes on (a restart before it ends "
                        "could show part of it again): %s", self.conversation_key, exc)

