"""The Bolt listeners: Slack's events, the ``/compact`` command and button presses, handed to the core.

Each listener only translates: a message becomes one ``InboundMessage`` (``inbound.heard`` decides
whether it is the relay's), a press one ``ButtonPress``; the core de-duplicates, checks the
allow-list and routes. Slack may deliver an interaction twice (a Socket Mode envelope redelivered,
an HTTP request retried); a press is applied once, so a repeat never answers "expired" for a tap
that worked.

In Socket Mode a message or a mention is taken without Bolt's dispatch (``on_event``, called by the
socket's handler): the same translation, without a context, a Web API client and a middleware chain
made for every event (in a burst, every mention arriving twice); the rest goes through Bolt.

Nothing is acknowledged before it is stored: the Bolt app runs with ``process_before_response``, so
Slack's acknowledgement (the Socket Mode ack, the HTTP 200) goes out only when a listener returns,
and a message listener returns once the core has journaled the message (``Host.submit``); the core
handles it after the conversation's earlier messages. A store that cannot journal makes the
listener fail: no acknowledgement, and Slack sends the event again; its person is told once that it
will be answered, and the relay holds the message meanwhile, offering it to the store again with a
growing delay, so it is answered as soon as the store takes it, not at Slack's next delivery (which
then finds it journaled). Slack delivers an event four times at most (at once, then about 1 and 5
minutes later): the last delivery (``retry_attempt``, ``X-Slack-Retry-Num``: 3) is acknowledged
while the relay still holds the message (a relay stopped after that loses it, and says so in its
log). An event that cannot be read is logged once (never its text), stored as rejected and
acknowledged. Presses are handled in tasks of their own (the host's), so every acknowledgement
leaves well within Slack's 3 seconds; a press that changed nothing is answered to the presser only,
at the channel's pace (``Host.notify``).

``/compact`` cannot be sent in a thread (Slack's rule), so in a channel it applies to the person's
latest conversation there; it is acknowledged at once (Slack wants an answer within 3 seconds) with
a line saying where the answer will appear, or how to start a conversation when there is none.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import extract_team_id

from core.surface_api import HELD_RETRY_S, Attachment, ButtonPress, HeldMessages, Host, InboundMessage, StoreError
from surfaces.slack import wording
from surfaces.slack.files import SlackFiles
from surfaces.slack.inbound import Heard, Unreadable, deleted, edited, heard, message_id, person_text
from surfaces.slack.keys import Asker, Thread
from surfaces.slack.render import ACTION_PREFIX
from surfaces.slack.surface import SURFACE_NAME, SlackSurface
from surfaces.slack.threads import Threads

__all__ = ["Listeners"]

log = logging.getLogger("acp_relay.slack.listeners")

Ack = Callable[..., Awaitable[Any]]
#: Slack's last delivery of an event (``retry_attempt`` counts the ones before it): it never sends it again.
LAST_RETRY = 3


def _retry(request: AsyncBoltRequest) -> int:
    """Slack's count of the deliveries of this event before this one (``X-Slack-Retry-Num``)."""
    values = request.headers.get("x-slack-retry-num") or ["0"]
    return int(values[0]) if values[0].isdigit() else 0


class _Seen:
    """The last ``size`` interaction ids (a redelivery carries the same one)."""

    def __init__(self, size: int = 2000) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._size = size

    def first(self, ident: str) -> bool:
        if not ident:
            return True
        if ident in self._ids:
            return False
        self._ids[ident] = None
        while len(self._ids) > self._size:
            self._ids.popitem(last=False)
        return True


def _team(body: dict[str, Any], context: AsyncBoltContext) -> str:
    team = body.get("team")
    return str(context.team_id or body.get("team_id") or (team.get("id") if isinstance(team, dict) else "") or "")


class Listeners:
    """Translate Slack's requests for ``host``; each message carries who asked as its ``origin``."""

    def __init__(self, host: Host, surface: SlackSurface, threads: Threads, files: SlackFiles, *,
                 bot_user_id: str = "", held_retry_s: tuple[float, float] = HELD_RETRY_S) -> None:
        self.host = host
        self.surface = surface
        self.threads = threads
        self.files = files
        self._bot_user_id = bot_user_id  # the app's own member id ("": not known, Bolt asks on each event)
        self._seen = _Seen()
        self._held = HeldMessages(host, "Slack", retry_s=held_retry_s)

    def register(self, app: AsyncApp) -> None:
        """Attach every listener to ``app``."""
        app.event("app_mention")(self.on_mention)
        app.event("message")(self.on_message)
        app.command("/compact")(self.on_compact)
        app.action(re.compile(rf"^{re.escape(ACTION_PREFIX)}"))(self.on_button)
        app.error(self.on_error)

    async def on_error(self, error: Exception) -> None:
        """A listener failed (Bolt answers Slack 500, so Slack sends the event again): a store that could
        not journal is a fault the relay expects, one line; anything else keeps its traceback."""
        if isinstance(error, StoreError):
            log.warning("a Slack event could not be stored; Slack sends it again: %s", error)
        else:
            log.error("a Slack listener failed; Slack sends the event again", exc_info=error)

    # -- messages ----------------------------------------------------------------------------

    async def on_event(self, body: dict[str, Any], retry: int = 0) -> bool:
        """A Socket Mode ``events_api`` payload: a message or a mention is taken here as its Bolt
        listener would take it (True: acknowledge it once this returns; it raises when the store
        cannot journal it); anything else is Bolt's (False). Bolt's dispatch (a context, a Web API
        client and a middleware chain for each event, every mention arriving twice) was most of the
        relay's own work on the way in, and its listeners here only translate. Before the app's
        member id is known (``auth.test`` failed at start) every event is Bolt's."""
        event = body.get("event")
        kind = event.get("type") if isinstance(event, dict) else None
        if not self._bot_user_id or body.get("type") != "event_callback" or kind not in ("app_mention", "message"):
            return False
        assert isinstance(event, dict)  # (kind says so)
        await self._message(body, event, team=str(extract_team_id(body) or ""), bot_user_id=self._bot_user_id,
                            mention_event=kind == "app_mention", retry=retry)
        return True

    async def on_mention(self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext,
                         request: AsyncBoltRequest) -> None:
        """``@app …`` in a channel: starts a thread under the message, or continues its thread."""
        await self._message(body, event, team=_team(body, context), bot_user_id=str(context.bot_user_id or ""),
                            mention_event=True, retry=_retry(request))

    async def on_message(self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext,
                         request: AsyncBoltRequest) -> None:
        """Any message the app can see: a DM, or a reply in a thread the app is part of."""
        await self._message(body, event, team=_team(body, context), bot_user_id=str(context.bot_user_id or ""),
                            mention_event=False, retry=_retry(request))

    async def _message(self, body: dict[str, Any], event: dict[str, Any], *, team: str, bot_user_id: str,
                       mention_event: bool, retry: int) -> None:
        unsure: StoreError | None = None
        try:
            if event.get("subtype") == "message_changed":
                edit = edited(event, team=team, bot_user_id=bot_user_id, joined=self.threads.joined)
                if edit is not None:
                    await self._hand_change(edit.heard, f"edit:{edit.edit_ts}")
                return
            if event.get("subtype") == "message_deleted":
                gone = deleted(event, team=team)
                if gone is not None:
                    await self._hand_change(gone, "deleted", removal=True)
                return
            try:
                got = heard(event, team=team, bot_user_id=bot_user_id, joined=self.threads.joined,
                            mention_event=mention_event)
            except StoreError as exc:  # a reply in a thread not in memory: whether the app is part of it is
                unsure = exc  # the store's to say, and it refused: read as if it were, and held until it says
                got = heard(event, team=team, bot_user_id=bot_user_id, joined=lambda _: True,
                            mention_event=mention_event)
        except Unreadable as exc:
            event_id = str(body.get("event_id") or "")
            log.warning("skipped Slack event %s (%s): it could not be read (%s)", event_id or "without an id",
                        str(event.get("type") or "?"), exc)
            if event_id:
                self.host.reject(f"event:{event_id}", str(exc))
            return
        if got is not None:
            await self._hand_over(got, retry, unsure=unsure)

    async def _hand_change(self, got: Heard, change: str, *, removal: bool = False) -> None:
        """Journal a person's edit of the message ``got`` (its words now, and its files: the core reads them
        only when the edit makes the message the app's, a mention added), or its deletion (``removal``),
        under the message's id and ``change``; the core answers it in that message's conversation. A store
        that refuses it raises: Slack is not acknowledged and sends it again."""
        thread = got.thread
        original = message_id(thread.team, thread.channel, got.ts)
        if not removal:
            self._note_thread(thread, got.user)  # a mention edited in makes the thread the app's, as a message does
        async with self.host.ordered(thread.key):
            attached = await self.files.fetch(got.files) if got.files and self.host.permits(got.user) else ()
            await self.host.submit(InboundMessage(SURFACE_NAME, thread.key, got.user, got.text,
                                                  f"{original}:{change}", origin=Asker(got.user, got.ts),
                                                  attachments=attached, edits=original, deleted=removal))

    async def _hand_over(self, got: Heard, retry: int, *, unsure: StoreError | None = None) -> None:
        """Journal the message (the listener returns, so Slack is acknowledged); the core handles it next.
        ``unsure``: the store could not say whether the app is part of the message's thread: the message is
        held (nobody told) until it can, then handed over if it is, or let go. The files shared with it
        are downloaded first (never a stranger's), in the thread's line: a later message waits for them."""
        async with self.host.ordered(got.thread.key):
            attached = await self.files.fetch(got.files) if got.files and self.host.permits(got.user) else ()
            await self._submit(got, attached, retry, unsure)

    async def _submit(self, got: Heard, attached: tuple[Attachment, ...], retry: int,
                      unsure: StoreError | None) -> None:
        thread = got.thread
        message = InboundMessage(SURFACE_NAME, thread.key, got.user, got.text,
                                 message_id(thread.team, thread.channel, got.ts), origin=Asker(got.user, got.ts),
                                 attachments=attached)
        ours = partial(self._joined_now, got)  # (asked only while the store cannot say: ``unsure``)
        if unsure is None:
            self._note_thread(thread, got.user)
        # A message of its thread is held: this one waits behind it.
        refused = self._held.behind(message, ours=None if unsure is None else ours)
        if refused is None and unsure is not None:
            if not self._held.hold_unsure(message, unsure, ours):
                return  # saved after an earlier hold: this is Slack's repeat of it
            refused = unsure
        if refused is None:
            try:
                await self.host.submit(message)
                return
            except StoreError as exc:
                if not self._held.refused(message, exc):
                    return  # saved after an earlier refusal: this is Slack's repeat of it
                refused = exc
        if retry < LAST_RETRY:
            raise refused.with_traceback(None)  # not acknowledged: Slack sends it again (a repeat by then)
        log.warning("Slack will not send message %s again: acknowledged, the relay holds it", message.message_id)

    def _joined_now(self, got: Heard) -> bool:
        """Whether a message held while the store could not say is in a thread the app is part of (asked
        of the store again; it raises while the store still refuses); its thread is noted if so."""
        if not self.threads.joined(got.thread):
            return False
        self._note_thread(got.thread, got.user)
        return True

    def _note_thread(self, thread: Thread, user: str) -> None:
        """Keep ``thread`` as the app's and as ``user``'s latest in its channel. A store that refuses this
        (the database away) must not cost the message itself, which is journaled (or held) next: the
        thread is then known in this relay's memory only, and said so in the log."""
        try:
            if not thread.is_dm and self.host.permits(user):
                # Only a person who may use the agent makes a thread the app's: replies in a thread a
                # stranger started with a mention are the people's own (the stranger is refused once).
                self.threads.join(thread)
            self.threads.note_latest(thread, user)
        except StoreError as exc:
            log.warning("could not keep Slack thread %s in the store (after a restart a reply there may need a "
                        "mention again): %s", thread.key, exc)

    # -- the slash command -------------------------------------------------------------------

    async def on_compact(self, ack: Ack, command: dict[str, Any], context: AsyncBoltContext) -> None:
        """``/compact [words]``: acknowledged at once, then sent to the person's latest conversation."""
        team = _team(command, context)
        channel, user = str(command.get("channel_id", "")), str(command.get("user_id", ""))
        trigger = str(command.get("trigger_id", ""))
        if not self._seen.first(f"command:{trigger}"):
            await ack()
            return
        thread_ts = str(command.get("thread_ts") or "")
        thread = Thread(team, channel, thread_ts) if thread_ts else self.threads.latest(team, channel, user)
        if thread is None:
            await ack(text=wording.COMPACT_NO_THREAD)
            return
        await ack(text=wording.COMPACT_SENT)  # (sent when this returns: after the command is journaled)
        text = f"/compact {person_text(str(command.get('text') or ''))}".rstrip()
        await self.host.submit(InboundMessage(SURFACE_NAME, thread.key, user, text,
                                              f"{team}:command:{trigger or channel}", origin=Asker(user)))

    # -- buttons -----------------------------------------------------------------------------

    async def on_button(self, ack: Ack, body: dict[str, Any], context: AsyncBoltContext) -> None:
        """A press on an approval or model button: acknowledged at once, handled in a task of its own."""
        await ack()
        self.host.tasks.spawn(self._press(body, context), name="slack-press")

    async def _press(self, body: dict[str, Any], context: AsyncBoltContext) -> None:
        """Applied once; a stale press answers "expired" (only to the person who pressed)."""
        actions = body.get("actions") or [{}]
        action = actions[0]
        user = str((body.get("user") or {}).get("id", ""))
        press_id = str(body.get("trigger_id") or action.get("action_ts") or "")
        if not self._seen.first(f"press:{user}:{press_id}"):
            log.info("ignoring a redelivered button press")
            return
        container = body.get("container") or {}
        message = body.get("message") or {}
        channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
        ts = str(message.get("ts") or container.get("message_ts") or "")
        thread = Thread(_team(body, context), channel, str(message.get("thread_ts") or container.get("thread_ts")
                                                          or ts))
        result = await self.host.press(ButtonPress(SURFACE_NAME, thread.key, user, str(action.get("value") or ""),
                                                   ts))
        if result.outcome != "resolved":  # a resolved press shows in the prompt's own update
            self.host.notify(thread.key, result.text, private_to=user)
