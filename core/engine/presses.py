"""Button presses that reach a relay which does not own the conversation (relays sharing a store).

An approval waits in the owner's memory, with its turn; the platform may deliver the press to any
relay (another Socket Mode connection, the load balancer). The relay that received it sends it to
the owner (``NOTIFY press``), the owner resolves it as if pressed there and sends back what it did
(``NOTIFY press_done``), and the receiving relay answers the platform with that. A press the owner
does not answer in time (``WAIT_S``: platforms want an answer to a tap within 3 s) is answered
"expired": it changed nothing that the person can tell, and a later tap is refused as used or
applied, never twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict

from core.engine import wording
from core.engine.messages import ButtonPress, PressResult
from core.store import Note, Notifier, Store, StoreError

__all__ = ["PRESS", "PRESS_DONE", "WAIT_S", "PressForwarding"]

log = logging.getLogger("acp_relay.engine.presses")

PRESS = "press"
PRESS_DONE = "press_done"
WAIT_S = 2.5


class PressForwarding:
    """Sends presses to the owner and answers the presses sent to this relay (``on_note``)."""

    def __init__(self, store: Store, relay: str, *, owns: Callable[[str], bool],
                 handle: Callable[[ButtonPress], Awaitable[PressResult]]) -> None:
        self._notifier = Notifier(store)
        self._relay = relay
        self._owns = owns
        self._handle = handle
        self._waiting: dict[str, asyncio.Future[PressResult]] = {}

    async def forward(self, press: ButtonPress) -> PressResult:
        """Have the owner resolve ``press``; what it did, or "expired" when it did not answer in time."""
        ident = uuid.uuid4().hex
        answer: asyncio.Future[PressResult] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = answer
        try:
            self._notifier.notify(PRESS, json.dumps({"id": ident, "from": self._relay, "press": asdict(press)}))
            async with asyncio.timeout(WAIT_S):
                return await answer
        except (TimeoutError, StoreError) as exc:
            log.warning("a press in %s was not answered by its owner: %r", press.conversation_key, exc)
            return PressResult("expired", wording.PRESS_EXPIRED)
        finally:
            self._waiting.pop(ident, None)

    async def on_note(self, note: Note) -> None:
        """A press sent to the owner (this relay, if it owns the conversation), or an owner's answer."""
        try:
            data = json.loads(note.payload)
            if note.channel == PRESS:
                press = ButtonPress(**data["press"])
                if not self._owns(press.conversation_key):
                    return
                result = await self._handle(press)
                self._notifier.notify(PRESS_DONE, json.dumps({"id": data["id"], "to": data["from"],
                                                              "outcome": result.outcome, "text": result.text}))
            elif note.channel == PRESS_DONE and data.get("to") == self._relay:
                waiter = self._waiting.get(str(data["id"]))
                if waiter is not None and not waiter.done():
                    waiter.set_result(PressResult(data["outcome"], str(data["text"])))
        except (ValueError, KeyError, TypeError) as exc:  # another relay's bug: never this relay's end
            log.warning("an unreadable %s notification was ignored: %r", note.channel, exc)
