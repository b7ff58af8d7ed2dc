"""Everything the relay posts goes through the ``Outbox``: the chat's pace, the delivery rules, and
the ledger of answers a chat would not take.

An answer that could not be delivered is kept (only the part that did not arrive) and resent until
it lands. A chat that refuses for good (``DeliveryRefused``: the bot was removed) is logged once and
its row dropped; a row whose resend fails in a way that cannot pass (a surface bug) is logged once,
with its traceback, and left in the ledger for the next start instead of being retried forever.

Relays sharing a store: the ledger's rows of a conversation are its owner's to write, fenced by its
lease like every other write of the owner (``fenced``): a relay whose lease was taken over can
neither keep an answer nor record one as delivered (``LeaseLost``); the new owner answers. Each
platform call of the owner is checked against its lease's deadline first (``fence``): past it, no
call is made, and nothing is kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

from core.engine import wording
from core.engine.blocks import block_from_json
from core.engine.calls import Fence
from core.engine.messages import Button, InboundMessage
from core.engine.pacing import Pacer
from core.engine.streamed import ReplyLog
from core.engine.streamer import Content, Reply, Streamer
from core.engine.surface import DeliveryError, DeliveryFailed, DeliveryRefused, Surface
from core.engine.tasks import TaskSet
from core.redact import redact
from core.store import LeaseLost, OutboundRecord, Store, StoreError

__all__ = ["Outbox"]

log = logging.getLogger("acp_relay.engine.delivery")

Sleep = Callable[[float], Awaitable[None]]

#: A ledger row resent this many times without landing waits for the next start.
_MAX_RESENDS = 30
_MAX_RESEND_DELAY_S = 60.0


class Outbox:
    """Delivery for every surface of one relay; ``pacer`` paces each chat across all of them."""

    def __init__(self, store: Store, tasks: TaskSet, surfaces: Mapping[str, Surface], *,
                 default_interval_s: float, sleep: Sleep = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.tasks = tasks
        self.surfaces = surfaces
        self.default_interval_s = default_interval_s
        self.sleep = sleep
        self.clock = clock
        self.pacer = Pacer(sleep=sleep, clock=clock)
        self._resends: dict[int, int] = {}  # ledger id -> failed resends in this run
        self._parked: set[int] = set()  # ledger ids left for the next start
        self._redelivery: asyncio.Task[None] | None = None
        #: Relays sharing a store: whether this relay answers a conversation now (taking it if nobody
        #: does), so a kept answer is resent by one relay only.
        self.owns: Callable[[str], bool] = lambda key: True
        #: The store for the ledger's writes about a conversation (relays sharing a store: fenced by
        #: the owner's lease, ``Ownership.fenced``).
        self.fenced: Callable[[str], Store] = lambda key: store
        #: The check before each platform call about a conversation (relays sharing a store: against
        #: the owner's lease, ``Ownership.guard``; None: no check).
        self.fence: Callable[[str], Fence | None] = lambda key: None

    def streamer(self, surface: Surface, key: str, *, reply_to: str | None = None, origin: object | None = None,
                 log: ReplyLog | None = None) -> Streamer:
        """A streamer for one reply in ``key``, paced with everything else in that chat; ``origin`` is the
        one of the message it answers; ``log`` notes the messages the reply occupies (so a restart
        continues it in them)."""
        own = surface.capabilities_for(key, origin).edit_interval_s
        return Streamer(surface, key, interval_s=self.default_interval_s if own is None else own,
                        reply_to=reply_to, origin=origin, sleep=self.sleep, clock=self.clock, pacer=self.pacer,
                        log=log, fence=self.fence(key))

    async def say(self, surface: Surface, key: str, content: Content, *,
                  buttons: tuple[Button, ...] = ()) -> str | None:
        """A standalone notice; returns its message id, or None when it could not be delivered."""
        try:
            return await self.streamer(surface, key).post(content, buttons)
        except DeliveryError as exc:
            log.warning("could not deliver a notice in %s: %s", key, exc)
            return None
        except LeaseLost as exc:
            _not_ours(key, exc)
            return None

    async def reply(self, surface: Surface, message: InboundMessage, content: Content, *, private: bool = False,
                    buttons: tuple[Button, ...] = ()) -> str | None:
        """Answer ``message`` itself (a command, a refusal), privately where ``private`` and the surface can."""
        key = message.conversation_key
        try:
            return await self.streamer(surface, key, origin=message.origin).post(
                content, buttons, answering=message, private=private)
        except DeliveryError as exc:
            log.warning("could not answer a message in %s: %s", key, exc)
            return None
        except LeaseLost as exc:
            _not_ours(key, exc)
            return None

    async def edit(self, surface: Surface, key: str, message_id: str, content: Content,
                   buttons: tuple[Button, ...] = ()) -> None:
        """Replace a standalone message (an approval prompt once decided)."""
        try:
            await self.streamer(surface, key).edit_message(message_id, content, buttons)
        except DeliveryError as exc:
            log.warning("could not update a message in %s: %s", key, exc)
        except LeaseLost as exc:
            _not_ours(key, exc)

    async def deliver(self, streamer: Streamer, reply: Reply) -> None:
        """Flush an answer's final state. What the platform refuses is kept and resent; the person is
        told, in words that never read as an agent failure."""
        surface, key = streamer.surface, streamer.conversation_key
        try:
            await streamer.finish(reply)
            return
        except DeliveryRefused as exc:
            log.warning("%s will not take messages in %s any more (%s): the answer was dropped",
                        surface.name, key, exc)
            return
        except LeaseLost:
            raise  # another relay answers it now: nothing is kept from here
        except Exception as exc:  # DeliveryError, or a surface bug: either way the answer is kept
            if isinstance(exc, DeliveryError):
                log.warning("could not deliver the answer in %s: %s", key, exc)
            else:
                log.exception("delivering the answer in %s failed unexpectedly", key)
        try:
            self._keep_rest(surface, key, streamer, reply)
        except LeaseLost:
            raise
        except StoreError as exc:  # neither shown nor kept (a full disk): said so, nothing promised
            log.warning("could not keep the answer in %s for a later delivery either: %s", key, exc)
            await self.say(surface, key, wording.delivery_lost_text())
            return
        # A short notice may get through where the answer did not.
        await self.say(surface, key, wording.delivery_failure_text())
        self.schedule_redelivery()

    async def attach_rest(self, streamer: Streamer, rest: str) -> None:
        """The rest of an answer cut at ``engine.max_answer_bytes``, as a file below it (redacted like
        everything the relay posts); where the platform takes no files, a sentence says it was left out."""
        data = redact(rest).encode()
        try:
            await streamer.send_file("answer-rest.md", data, caption=wording.answer_rest_caption(len(data)),
                                     fallback=wording.answer_rest_dropped_text(len(data)))
        except DeliveryError as exc:
            log.warning("could not post the rest of a long answer in %s: %s", streamer.conversation_key, exc)

    def _keep_rest(self, surface: Surface, key: str, streamer: Streamer, reply: Reply,
                   row: OutboundRecord | None = None) -> None:
        """The ledger keeps only what did not arrive (its blocks, as the pieces showed them), so a
        redelivery never repeats what did, and shows the rest as it would have been shown."""
        missing = streamer.undelivered(reply)
        text = "\n\n".join(p.text for p in missing)
        if row is not None:
            if text == str(row.payload.get("text", "")):
                return  # nothing arrived: the row stays as it is
            self.fenced(key).ack_outbound(row.id)
        if text:
            self.fenced(key).add_outbound(key, {"surface": surface.name, "text": text,
                                          "blocks": [b.to_json() for p in missing for b in p.blocks]})

    # -- the ledger ------------------------------------------------------------------------

    @property
    def redelivering(self) -> bool:
        """The ledger is being worked through."""
        return self._redelivery is not None and not self._redelivery.done()

    def schedule_redelivery(self) -> None:
        """Resend what the ledger holds, unless that is already running."""
        if self._redelivery is None or self._redelivery.done():
            self._redelivery = self.tasks.spawn(self._redeliver(), name="redelivery")

    def _due(self) -> list[OutboundRecord]:
        # Rows for a surface this relay does not run wait in the ledger for one that does; rows of a
        # conversation another relay owns are that relay's to resend.
        return [r for r in self.store.pending_outbound()
                if r.payload.get("surface") in self.surfaces and r.id not in self._parked
                and self.owns(r.conversation_key)]

    async def _redeliver(self) -> None:
        """Work through the ledger until nothing is due, waiting longer after each pass that left some.
        A store that fails meanwhile (the database away, a full disk) ends it with one warning: the rows
        stay for the next pass (the next heartbeat of relays sharing a store, failure, or start)."""
        delay = 1.0
        try:
            while pending := self._due():
                for row in pending:
                    try:
                        await self._resend(row)
                    except LeaseLost as exc:  # taken over meanwhile: the row is the new owner's to resend
                        log.info("a kept answer for %s is another relay's to resend now: %s",
                                 row.conversation_key, exc)
                        self._parked.add(row.id)
                if self._due():
                    await self.sleep(delay)
                    delay = min(delay * 2, _MAX_RESEND_DELAY_S)
        except StoreError as exc:
            log.warning("could not work through the kept answers (they stay kept): %s", exc)

    async def _resend(self, row: OutboundRecord) -> None:
        surface = self.surfaces[str(row.payload["surface"])]
        kept = row.payload.get("blocks")
        blocks = tuple(block_from_json(b) for b in kept if isinstance(b, dict)) if isinstance(kept, list) else ()
        text: Reply = [blocks] if blocks else str(row.payload.get("text", ""))  # (a row from before blocks)
        streamer = self.streamer(surface, row.conversation_key)
        try:
            await streamer.finish(text)
        except DeliveryRefused as exc:
            log.warning("%s will not take messages in %s any more (%s): a kept answer was dropped",
                        surface.name, row.conversation_key, exc)
            self.fenced(row.conversation_key).ack_outbound(row.id)
        except DeliveryFailed as exc:
            failures = self._resends[row.id] = self._resends.get(row.id, 0) + 1
            log.info("redelivery to %s failed again (%d): %s", row.conversation_key, failures, exc)
            self._keep_rest(surface, row.conversation_key, streamer, text, row)
            if failures >= _MAX_RESENDS:
                log.warning("an answer for %s could not be delivered after %d tries; it is kept for the "
                            "next start", row.conversation_key, failures)
                self._parked.add(row.id)
        except Exception:  # a surface bug cannot pass by retrying: once, with its traceback
            log.exception("redelivering an answer to %s failed; it is kept for the next start", row.conversation_key)
            self._parked.add(row.id)
            self._keep_rest(surface, row.conversation_key, streamer, text, row)
        else:
            self.fenced(row.conversation_key).ack_outbound(row.id)


def _not_ours(key: str, exc: LeaseLost) -> None:
    """A notice not made: another relay owns ``key`` now (the conversation is stopped here)."""
    log.info("said nothing more in %s: %s", key, exc)
