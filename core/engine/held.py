"""Messages the store refused (a full disk, the database away), held in memory and offered to the
store again until it takes them, for a surface whose platform sends a message again only a few times,
or only after a while.

``refused(message, exc)`` is called where ``Host.submit`` raised: the person is told once (``tell``:
never a stranger, who hears only the core's refusal) that their message will be answered, and the
message is held: offered to the store again after ``HELD_RETRY_S``'s first wait, twice as long each time up to
its second, so it is answered as soon as the store takes it. The surface still leaves the platform's
delivery unconfirmed where it can, so the platform sends it again: finding it journaled by then, the
core takes that as the repeat it is. A relay stopped while it holds a message says so in its log. A
surface that offers the message again itself (Discord, in its channel's line) only ``tell``s, and
says when it is ``saved``.

A conversation's messages are answered in the order they were written, also while one of them is
held: a later message of a conversation with a message held is held ``behind`` it, never journaled
ahead of it (a store that flaps would otherwise take the second message while the first waits, and
the agent would read them swapped). The messages held in a conversation are offered to the store
in order, the next one as soon as the one before it is taken; a delivery in the conversation (a new
message, the platform's repeat) ends the pause before the next offer, so a line does not wait out
a long pause once the store is back.

A store that flaps (it takes a held message, then refuses the platform's repeat of it) must not
cost a second notice, nor hold the message again: the ids of the messages saved after a hold are
remembered (the latest ``SAVED_KEPT``), and a refused repeat of one is confirmed as the repeat it is.
Nor does a conversation read the same notice for every message it writes while the store flaps: it
is told once in ``TELL_QUIET_S``; the messages refused meanwhile are held all the same.

Whether a message is the relay's at all may be the store's to say (a Slack reply in a thread the app
may be part of, asked of the store when the thread is not in memory). A message held with ``ours``
(``hold_unsure``, ``behind``) is held in its line like any other, but nobody is told, and its offer asks
``ours()`` first: the store refusing again keeps it waiting; False lets it go, never submitted.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from core.engine.messages import InboundMessage
from core.plugin import Host
from core.store import HELD_RETRY_S, StoreError, held_prose

__all__ = ["HeldMessages"]

log = logging.getLogger("acp_relay.engine.held")

#: How many messages saved after a hold are remembered, to know a refused repeat of one.
SAVED_KEPT = 1024
#: A conversation told that its message is held is not told again for this long (seconds).
TELL_QUIET_S = 60.0

Sleep = Callable[[float], Awaitable[None]]


@dataclass(slots=True)
class _Line:
    """One conversation's held messages, in order, and what holds them."""

    why: StoreError  # the latest refusal
    messages: deque[InboundMessage] = field(default_factory=deque)
    pause: asyncio.Future[None] | None = None  # the hold's wait before its next offer, while it waits


class HeldMessages:
    """The messages one surface holds for the store; ``platform`` names it in the log."""

    def __init__(self, host: Host, platform: str, *, retry_s: tuple[float, float] = HELD_RETRY_S,
                 sleep: Sleep = asyncio.sleep) -> None:
        self._host = host
        self._platform = platform
        self._retry_s = retry_s
        self._sleep = sleep
        self._held: set[str] = set()  # message ids: held, and their person told (if allowed and sure)
        self._unsure: dict[str, Callable[[], bool]] = {}  # message id -> whether it is the relay's (held ones)
        self._lines: dict[str, _Line] = {}  # conversation -> its messages held
        self._saved: dict[str, None] = {}  # message ids saved after a hold, oldest first
        self._told: dict[str, float] = {}  # conversation -> when it was last told (loop time), oldest first

    def refused(self, message: InboundMessage, exc: StoreError) -> bool:
        """The store refused ``message``: its person told once, in its conversation, and the message held
        until the store takes it (already held: nothing more). False when the store took it already
        (it was held, and saved): this offer is a repeat, for the surface to confirm to its platform."""
        if message.message_id in self._saved:
            log.info("the store refused %s message %s again, but it was saved already: taken as a repeat",
                     self._platform, message.message_id)
            return False
        if not self.tell(message, exc):
            return True
        log.warning("could not store %s message %s: held, and offered to the store again until it takes it: %s",
                    self._platform, message.message_id, exc)
        self._hold(message, exc)
        return True

    def hold_unsure(self, message: InboundMessage, exc: StoreError, ours: Callable[[], bool]) -> bool:
        """The store refused to say whether ``message`` is the relay's (``exc``): held, nobody told, and
        at its offer ``ours()`` decides (see the module's doc); held already, nothing more. False when it
        was saved already after a hold (this is the platform's repeat, for the surface to confirm)."""
        if message.message_id in self._saved:
            return False
        if message.message_id in self._held:
            return True
        log.warning("could not tell whether %s message %s is for the relay: held, and asked again until the "
                    "store answers: %s", self._platform, message.message_id, exc)
        self._held.add(message.message_id)
        self._unsure[message.message_id] = ours
        self._hold(message, exc)
        return True

    def behind(self, message: InboundMessage, *, ours: Callable[[], bool] | None = None) -> StoreError | None:
        """Before ``message`` is submitted: while a message of its conversation is held, it is held too,
        behind it (answered after it), and the refusal that holds the line is returned, for the surface
        to treat as its own (the platform's delivery left unconfirmed). None: nothing is held before it
        (the platform's repeat of the first message held may be submitted: the hold finds it taken).
        ``ours``: whether the message is the relay's is not known yet (as ``hold_unsure``)."""
        line = self._lines.get(message.conversation_key)
        if line is None:
            return None
        if line.pause is not None:  # the platform delivers again: the store may be back, try the line now
            line.pause.cancel()
        if message.message_id in self._saved:
            return None  # a repeat of a message saved already: the store knows it
        if message.message_id in self._held:  # the platform's repeat of a message held already: it may
            return None if line.messages[0].message_id == message.message_id else line.why  # go if first
        if ours is None:
            self.tell(message, line.why)
        else:
            self._held.add(message.message_id)
            self._unsure[message.message_id] = ours
        log.info("%s message %s waits behind a held message of its conversation", self._platform, message.message_id)
        line.messages.append(message)
        return line.why

    def tell(self, message: InboundMessage, exc: StoreError, *, where: str | None = None,
             reply_to: str | None = None) -> bool:
        """Tell ``message``'s person (in ``where``, by default its conversation) that it will be answered,
        unless they were told already or are a stranger; False when they were told already (or the
        message was saved since)."""
        if message.message_id in self._held or message.message_id in self._saved:
            return False
        self._held.add(message.message_id)
        if self._host.permits(message.user_id) and self._first_in_a_while(where or message.conversation_key):
            self._host.notify(where or message.conversation_key, held_prose(exc), reply_to=reply_to)
        return True

    def saved(self, message_id: str) -> None:
        """The store took the message (a surface that offered it again itself): no longer held, and a
        refused repeat of it is known for one."""
        if message_id not in self._held:
            return
        self._held.discard(message_id)
        self._saved[message_id] = None
        if len(self._saved) > SAVED_KEPT:
            del self._saved[next(iter(self._saved))]

    def _first_in_a_while(self, conversation: str) -> bool:
        """``conversation`` was not told in the last ``TELL_QUIET_S``; it counts as told now."""
        now = asyncio.get_running_loop().time()
        while self._told and now - next(iter(self._told.values())) >= TELL_QUIET_S:
            del self._told[next(iter(self._told))]
        if conversation in self._told:
            return False
        self._told[conversation] = now
        return True

    def _hold(self, message: InboundMessage, exc: StoreError) -> None:
        """Put ``message`` at the end of its conversation's line (its hold started if there was none)."""
        key = message.conversation_key
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _Line(exc)
            self._host.tasks.spawn(self._offer(key, line), name=f"{self._platform}-held:{message.message_id}")
        line.why = exc
        line.messages.append(message)

    async def _pause(self, line: _Line, delay_s: float) -> None:
        """Wait ``delay_s`` before the line is offered again, or less if a delivery cancels the pause."""
        line.pause = asyncio.ensure_future(self._sleep(delay_s))
        try:
            await asyncio.wait({line.pause})
        finally:
            line.pause.cancel()
            line.pause = None

    async def _offer(self, key: str, line: _Line) -> None:
        """Offer the conversation's held messages to the store, in order, until every one is taken."""
        held = line.messages
        delay, longest = self._retry_s
        try:
            while held:
                await self._pause(line, delay)
                while held:
                    message = held[0]
                    try:
                        if not self._ours(message):
                            log.info("%s message %s, held while the store could not say, is not for the relay",
                                     self._platform, message.message_id)
                            held.popleft()
                            self._held.discard(message.message_id)
                            continue
                        await self._host.submit(message)
                    except StoreError as exc:
                        log.debug("the store refused %s message %s again: %s", self._platform,
                                  message.message_id, exc)
                        line.why = exc
                        delay = min(delay * 2, longest)
                        break
                    log.info("saved %s message %s, held since the store refused it", self._platform,
                             message.message_id)
                    held.popleft()
                    self.saved(message.message_id)
                    delay = self._retry_s[0]
        except asyncio.CancelledError:
            for message in held:
                log.warning("the relay stopped while it held %s message %s for the store: unless %s sends it "
                            "again, it is lost", self._platform, message.message_id, self._platform)
            raise
        finally:
            for message in held:
                self._held.discard(message.message_id)
                self._unsure.pop(message.message_id, None)
            del self._lines[key]

    def _ours(self, message: InboundMessage) -> bool:
        """Whether a held message is the relay's (it raises StoreError while the store cannot say); once
        known, it is no longer asked."""
        ours = self._unsure.get(message.message_id)
        if ours is None:
            return True
        mine = ours()
        del self._unsure[message.message_id]
        return mine
