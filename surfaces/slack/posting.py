"""New messages in a thread that survive a kill between Slack taking them and the relay hearing back.

Slack takes no idempotency key for ``chat.postMessage`` or ``chat.startStream``: a relay killed after
Slack made the message but before it read the answer (the ts) leaves a message nothing in the store
knows of, and the restarted relay would write that piece of the answer again below it. So before such
a call the thread gets a mark in the surface's state (``Host.state``, the relay's store): when it was
made and whether it starts a stream. Once Slack answered, the mark gives way to the ts it answered
(the thread's last message any relay heard back about).

A mark still standing when a relay (after a restart) is first asked for a new message in that thread
means a call was never heard back from: the thread is read (``conversations.replies``, from the mark's
time less ``SKEW_S``, and never before the last message heard back about) and the app's own newest
message there that nobody heard back about is adopted (the surface edits it into what it was asked to
post) instead of posting again. A relay killed before its call reached Slack leaves a mark and no such
message: the piece is posted. Nothing is read when no mark stands, so an ordinary post costs two
small writes to the store (and one read per thread and process) and no call to Slack. A Slack
that will not let the thread be read (``missing_scope``, ``not_in_channel``, ``ratelimited``, ...)
gets the piece posted again, as before, and that is logged once. So does a store that cannot be
written (the database is down): the message is posted without its mark rather than held back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from core.surface_api import DeliveryFailed, RateLimited, StoreError, SurfaceState
from surfaces.slack.errors import SDK_FAILURES, error_code
from surfaces.slack.keys import Thread

__all__ = ["MARK_KEEP_S", "SKEW_S", "Orphan", "Posting"]

log = logging.getLogger("acp_relay.slack.posting")

#: How much earlier than its mark a message Slack made may carry a ts (the clocks of the relay's host
#: and of Slack differ a little).
SKEW_S = 30.0
#: A mark older than this is not acted on (the thread is not read; the piece is posted as before).
MARK_KEEP_S = 24 * 3600.0
_PREFIX = "posting:"
_PAGE = 15  # what Slack hands out a page for apps outside the Marketplace
_PAGES = 10  # a thread read back no further than this: a longer one is not ours to search
_CACHED = 10_000


@dataclass(frozen=True, slots=True)
class Orphan:
    """A message Slack made for a killed relay: its ts, and whether it was a stream (still open, perhaps)."""

    ts: str
    stream: bool


@dataclass(slots=True)
class _Mark:
    at: float
    after: str  # the thread's last message any relay heard back about ("": none)
    streams: int = 0
    calls: int = 0
    known: list[str] = field(default_factory=list)  # answered while another call was out

    def dump(self) -> str:
        return json.dumps({"at": self.at, "after": self.after, "stream": self.streams > 0, "known": self.known})


class Posting:
    """The marks of the threads a new message is being made in, and the adoption after a restart."""

    def __init__(self, client: AsyncWebClient, state: SurfaceState | None, bot_user: str,
                 clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._state = state
        self._bot_user = bot_user
        self._clock = clock
        self._out: dict[str, _Mark] = {}
        self._last: OrderedDict[str, str] = OrderedDict()  # thread key -> last ts heard back; looked at: ""
        self._refused = False
        self._unstored = False

    def prune(self, older_than_s: float = MARK_KEEP_S) -> int:
        """Forget the marks not written for ``older_than_s``; returns how many."""
        return self._state.prune(older_than_s, _PREFIX) if self._state is not None else 0

    async def new(self, thread: Thread, stream: bool, post: Callable[[], Awaitable[str]],
                  adopt: Callable[[Orphan], Awaitable[str]]) -> str:
        """Make a new message in ``thread`` with ``post`` (returns its ts); after a kill, ``adopt`` the
        one Slack made instead, when the thread shows one."""
        if self._state is None:
            return await post()
        key = thread.key
        if key not in self._last and key not in self._out:
            orphan = await self._orphan(thread)
            if orphan is not None:
                ts = await self._adopted(thread, orphan, adopt)
                if ts is not None:
                    return ts
        mark = self._out.get(key)
        if mark is None:
            mark = self._out[key] = _Mark(self._clock(), self._last.get(key, ""))
        mark.calls += 1
        mark.streams += stream
        self._write(key, mark.dump())
        try:
            ts = await post()
        except asyncio.CancelledError:  # Slack may have taken it: the mark stands, read at the next post
            self._answered(key, mark, stream, None, cancelled=True)
            raise
        except BaseException:
            self._answered(key, mark, stream, None)
            raise
        self._answered(key, mark, stream, ts)
        return ts

    def _answered(self, key: str, mark: _Mark, stream: bool, ts: str | None, *, cancelled: bool = False) -> None:
        assert self._state is not None
        mark.calls -= 1
        mark.streams -= stream
        if cancelled:
            if not mark.calls:
                del self._out[key]
                self._last.pop(key, None)
            return
        if ts is not None:
            self._remember(key, ts)
        if mark.calls:
            if ts is not None:
                mark.known.append(ts)
            self._write(key, mark.dump())
            return
        del self._out[key]
        self._write(key, self._heard(key))

    async def _adopted(self, thread: Thread, orphan: Orphan, adopt: Callable[[Orphan], Awaitable[str]]) -> str | None:
        assert self._state is not None
        try:
            ts = await adopt(orphan)
        except RateLimited:
            self._last.pop(thread.key, None)  # looked at again when the core sends again
            raise
        except DeliveryFailed as exc:
            log.info("a message a killed relay left in %s could not be taken up (%s); posting anew",
                     thread.channel, exc)
            return None
        log.info("took up the message %s a killed relay left in %s", ts, thread.channel)
        self._remember(thread.key, ts)
        self._write(thread.key, self._heard(thread.key))
        return ts

    def _write(self, key: str, value: str) -> None:
        assert self._state is not None
        try:
            self._state.set(_PREFIX + key, value)
        except StoreError as exc:
            if not self._unstored:
                self._unstored = True
                log.warning("the store would not keep a Slack posting mark (%s): a piece of an answer a "
                            "restart cuts off may show twice", exc)

    def _heard(self, key: str) -> str:
        return json.dumps({"after": self._last.get(key, "")})

    def _remember(self, key: str, ts: str) -> None:
        known = self._last.get(key, "")
        if known and ts and float(known) > float(ts):  # two calls out at once answered out of order
            ts = known
        self._last[key] = ts
        self._last.move_to_end(key)
        while len(self._last) > _CACHED:
            self._last.popitem(last=False)

    async def _orphan(self, thread: Thread) -> Orphan | None:
        """The message a killed relay's call made in ``thread``, when its mark stands and Slack shows one
        (read once a thread and process: later marks of the thread are this process's own)."""
        assert self._state is not None
        try:
            raw = self._state.get(_PREFIX + thread.key)
        except StoreError:
            self._remember(thread.key, "")  # the store is down: posted as before, not asked again
            return None
        try:
            mark = json.loads(raw) if raw else {}
            after = str(mark.get("after") or "")
            self._remember(thread.key, after)
            if "at" not in mark:
                return None
            at, stream = float(mark["at"]), bool(mark["stream"])
            known = {str(ts) for ts in mark["known"]}
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("an unreadable posting mark for a thread in %s was ignored", thread.channel)
            self._remember(thread.key, "")
            return None
        if self._clock() - at > MARK_KEEP_S:
            return None
        if not self._bot_user:
            self._refusal(thread, "the app's member id is unknown (auth.test failed at start)")
            return None
        oldest = max(at - SKEW_S, float(after) if after else 0.0)
        try:
            found = await self._read(thread, f"{oldest:.6f}")
        except SDK_FAILURES as exc:
            self._refusal(thread, error_code(exc) or type(exc).__name__)
            return None
        mine = [m for m in found if m.get("user") == self._bot_user and not m.get("files")
                and str(m.get("ts")) not in known and str(m.get("ts")) != thread.thread_ts
                and (not after or float(str(m.get("ts"))) > float(after))]
        return Orphan(str(mine[-1]["ts"]), stream) if mine else None

    async def _read(self, thread: Thread, oldest: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        cursor = None
        for _ in range(_PAGES):
            page = await self._client.conversations_replies(channel=thread.channel, ts=thread.thread_ts,
                                                            oldest=oldest, limit=_PAGE, cursor=cursor)
            messages += page.get("messages") or []
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not page.get("has_more") or not cursor:
                break
        return messages

    def _refusal(self, thread: Thread, why: str) -> None:
        if not self._refused:
            self._refused = True
            log.warning("Slack would not let the relay read a thread in %s (%s): a piece of an answer cut off "
                        "by a restart may show twice there", thread.channel, why)
