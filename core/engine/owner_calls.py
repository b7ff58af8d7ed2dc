"""Calls that only a conversation's owner can carry out, made from any relay (relays sharing a store).

What a button press, the Stop button or a panel's control acts on (a running turn, its approvals, the
agent's session) lives in the owner's memory, and the platform or the browser may reach any relay.
The relay reached sends the call to the owner (``NOTIFY owner_call``); the owner says at once that it
took it (``NOTIFY owner_done``, ``taken``), carries it out as if asked there, and sends back its
answer on the same channel. An answer too long for a notification (a long list of models) is left in
the store (the ``offsets`` rows of ``STORED``) and the notification says so.

An owner that does not take a call within ``TAKEN_WAIT_S`` (it died, or no longer owns the
conversation), or does not answer within the call's own time, leaves the caller with ``OwnerSilent``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from core.engine import wording
from core.store import Note, Notifier, Store, StoreError
from core.store.notify import MAX_PAYLOAD_BYTES

__all__ = ["CALL", "DONE", "STORED", "TAKEN_WAIT_S", "CallFailed", "Handler", "OwnerCalls", "OwnerSilent"]

log = logging.getLogger("acp_relay.engine.owner_calls")

CALL = "owner_call"
DONE = "owner_done"
#: Where an answer too long for a notification waits for its caller (a name no surface has).
STORED = "_owner_calls"
#: The owner takes a call at once, whatever it then does: platforms want an answer to a tap within 3 s.
TAKEN_WAIT_S = 2.5
#: A stored answer its caller stopped waiting for is forgotten after this long.
_STORED_KEPT_S = 3600.0

Answer = dict[str, Any]
#: Carries out one kind of call on the owner: (conversation key, arguments) -> the answer.
Handler = Callable[[str, dict[str, Any]], Awaitable[Answer]]


class OwnerSilent(Exception):
    """The owner did not take the call in time, or did not answer it in time."""


class CallFailed(Exception):
    """The owner carried the call out and it failed: ``str()`` is the owner's sentence for the person."""


class OwnerCalls:
    """Sends calls to owners (``call``) and carries out those sent to this relay (``on_note``)."""

    def __init__(self, store: Store, relay: str, *, owns: Callable[[str], bool]) -> None:
        self._store = store
        self._notifier = Notifier(store)
        self._relay = relay
        self._owns = owns
        #: What this relay carries out for the others, by kind.
        self.handlers: dict[str, Handler] = {}
        self._waiting: dict[str, tuple[asyncio.Event, asyncio.Future[Answer]]] = {}

    async def call(self, kind: str, key: str, args: dict[str, Any], *, wait_s: float) -> Answer:
        """Have ``key``'s owner carry out ``kind``; its answer. ``OwnerSilent`` when it did not take the
        call in time or answer within ``wait_s``; ``CallFailed`` with its sentence when it failed there."""
        ident = uuid.uuid4().hex
        taken = asyncio.Event()
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = (taken, answer)
        try:
            self._notifier.notify(CALL, json.dumps({"id": ident, "from": self._relay, "kind": kind, "key": key,
                                                    "args": args}))
            async with asyncio.timeout(wait_s):
                async with asyncio.timeout(min(TAKEN_WAIT_S, wait_s)):
                    await taken.wait()
                result = await answer
        except (TimeoutError, StoreError, ValueError) as exc:  # ValueError: arguments too long to send
            log.warning("the owner of %s did not answer a %s call: %r", key, kind, exc)
            raise OwnerSilent(kind) from exc
        finally:
            self._waiting.pop(ident, None)
        if "error" in result:
            raise CallFailed(str(result["error"]))
        return result

    async def on_note(self, note: Note) -> None:
        """A call sent to the owner (this relay, if it owns the conversation), or an owner's answer."""
        try:
            data = json.loads(note.payload)
            if note.channel == CALL:
                await self._carry_out(data)
            elif note.channel == DONE and data.get("to") == self._relay:
                self._answered(data)
        except (ValueError, KeyError, TypeError) as exc:  # another relay's bug: never this relay's end
            log.warning("an unreadable %s notification was ignored: %r", note.channel, exc)
        except StoreError as exc:  # the caller hears nothing: it says the owner did not answer
            log.warning("answering a call from another relay failed: %s", exc)

    async def _carry_out(self, data: dict[str, Any]) -> None:
        kind, key = str(data["kind"]), str(data["key"])
        handler = self.handlers.get(kind)
        if handler is None or not self._owns(key):
            if handler is None:
                log.warning("a %s call from %s is not one this relay carries out", kind, data["from"])
            return
        reply = {"id": data["id"], "to": data["from"]}
        self._notifier.notify(DONE, json.dumps({**reply, "taken": True}))
        try:
            answer = await handler(key, dict(data["args"]))
        except Exception:  # the handler's bug: logged once here, the caller gets a sentence
            log.exception("a %s call of %s from %s failed", kind, key, data["from"])
            answer = {"error": wording.OWNER_FAILED}
        payload = json.dumps({**reply, "answer": answer})
        if len(payload.encode()) > MAX_PAYLOAD_BYTES:
            with self._store.transaction():  # the row is there when the caller is woken
                self._store.prune_offsets(STORED, _STORED_KEPT_S)
                self._store.set_offset(STORED, str(data["id"]), json.dumps(answer))
                self._notifier.notify(DONE, json.dumps({**reply, "stored": True}))
            return
        self._notifier.notify(DONE, payload)

    def _answered(self, data: dict[str, Any]) -> None:
        ident = str(data["id"])
        waiting = self._waiting.get(ident)
        if waiting is None:
            if data.get("stored"):  # asked here, and given up on: nobody reads it
                self._store.prune_offsets(STORED, -1.0, ident)
            return
        taken, answer = waiting
        taken.set()
        if data.get("taken") or answer.done():
            return
        if data.get("stored"):
            raw = self._store.get_offset(STORED, ident)
            self._store.prune_offsets(STORED, -1.0, ident)
            if raw is None:
                raise ValueError(f"the stored answer {ident} is gone")
            answer.set_result(json.loads(raw))
        else:
            answer.set_result(dict(data["answer"]))
