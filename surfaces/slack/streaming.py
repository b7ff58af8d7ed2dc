"""Slack's native streaming (``chat.startStream`` / ``appendStream`` / ``stopStream``), whole-text.

The core hands the WHOLE piece being written on every flush; Slack only appends, so this module
remembers what each stream shows and appends the difference (of what the formatter says may be
streamed: ``SlackMessage.streamable``). A text that does not extend it (a tool line changed above the
answer) raises ``DeliveryFailed``: the core then ends the stream and edits the message with
``chat.update`` for the rest of the reply.

slack-sdk's ``chat_stream()`` helper is not used: it buffers what it could not send and sends it
again with the next append, while the core re-sends the whole text after a failure (a 429, a
network error), so the helper would show that part twice. The three Web API methods it wraps are
called directly instead.

A stream Slack has ended (about five minutes after it started, ``message_not_in_streaming_state``)
is finished with ``chat.update``: the message then shows the final text as an ordinary message. A
stream left open by a relay that was killed is stopped with the text the core ends it with (the
line saying the full answer follows); the core then edits its message like any other.
A stream Slack started for a relay killed before it heard back (``posting``) is stopped as it stands
and taken up as an edited one: what the core appends to it, or ends it with, is written with
``chat.update``. A channel where Slack refuses to start a stream (the workspace does not allow it, a channel type it
does not support) is remembered: later replies there are sent and edited instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.surface_api import DeliveryFailed, RateLimited
from surfaces.slack.errors import SDK_FAILURES, delivery_error, error_code, message_ts, translated
from surfaces.slack.keys import Thread
from surfaces.slack.render import SlackMessage

__all__ = ["NativeStreams"]

log = logging.getLogger("acp_relay.slack.streaming")

#: chat.update for a message: (thread, ts, what it shows).
Update = Callable[[Thread, str, SlackMessage], Awaitable[None]]


@dataclass(slots=True)
class _Live:
    thread: Thread
    shown: str  # the markdown the stream shows so far


class NativeStreams:
    """The open native streams of one app, by message ts."""

    def __init__(self, client: AsyncWebClient, update: Update) -> None:
        self._client = client
        self._update = update
        self._live: dict[str, _Live] = {}
        self._edited: dict[str, Thread] = {}  # taken up after a kill: grown by chat.update
        self._refused: set[str] = set()

    def available(self, channel: str) -> bool:
        """False where Slack has refused to start a stream."""
        return channel not in self._refused

    async def start(self, thread: Thread, message: SlackMessage, recipient: str | None) -> str:
        """Start a stream in ``thread`` showing ``message``; returns its message ts.

        In a channel Slack needs the person the stream is for (``recipient``, a member id).
        """
        if not thread.is_dm and not recipient:
            raise DeliveryFailed("slack: a stream in a channel needs its recipient")
        text = message.streamable
        to_user, to_team = (None, None) if thread.is_dm else (recipient, thread.team)  # None: left out
        try:
            response = await self._client.chat_startStream(channel=thread.channel, thread_ts=thread.thread_ts,
                                                           markdown_text=text or None, recipient_user_id=to_user,
                                                           recipient_team_id=to_team)
        except SlackApiError as exc:
            error = delivery_error(exc)
            if type(error) is DeliveryFailed and error_code(exc) and exc.response.status_code < 500:
                log.info("Slack does not stream in %s (%s); sending and editing there instead",
                         thread.channel, error_code(exc))
                self._refused.add(thread.channel)
            raise error from exc
        except SDK_FAILURES as exc:
            raise delivery_error(exc) from exc
        ts = message_ts(response, "ts", "chat.startStream")
        self._live[ts] = _Live(thread, text)
        return ts

    async def stop_orphan(self, thread: Thread, ts: str) -> None:
        """Stop, as it stands, a stream Slack may still hold open for a killed relay (one that had ended
        already, or a message that never was a stream, is left as it is)."""
        try:
            await translated(self._client.chat_stopStream(channel=thread.channel, ts=ts))
        except RateLimited:
            raise
        except DeliveryFailed as exc:
            log.info("a stream a killed relay left in %s was not open (%s)", thread.channel, exc)

    def adopt(self, thread: Thread, ts: str) -> None:
        """The stopped message ``ts`` stands for a stream from now on: appending and stopping edit it."""
        self._edited[ts] = thread

    async def append(self, ts: str, message: SlackMessage) -> None:
        """Show ``message`` (the whole piece so far) in the stream ``ts``."""
        if (edited := self._edited.get(ts)) is not None:
            await self._update(edited, ts, message)
            return
        live = self._live.get(ts)
        if live is None:
            raise DeliveryFailed("slack: no such stream")
        text = message.streamable
        if not text.startswith(live.shown):
            raise DeliveryFailed("slack: the text no longer extends what was streamed")
        delta = text[len(live.shown):]
        if delta:
            await translated(self._client.chat_appendStream(channel=live.thread.channel, ts=ts, markdown_text=delta))
            live.shown = text

    async def stop(self, thread: Thread, ts: str, message: SlackMessage) -> str:
        """End the stream ``ts`` so that its message shows ``message``; returns the message ts.

        A stream this process did not start (a relay killed mid-answer started it) is stopped with
        ``message`` appended to what it shows, so the cut-off text is marked, never left streaming.
        """
        if self._edited.pop(ts, None) is not None:
            await self._update(thread, ts, message)
            return ts
        live = self._live.pop(ts, None)
        text = message.markdown
        if live is None:
            try:
                await translated(self._client.chat_stopStream(channel=thread.channel, ts=ts,
                                                              markdown_text=f"\n\n{text}"))
                return ts
            except RateLimited:
                raise
            except DeliveryFailed as exc:  # it had ended (it expired): the message takes the text instead
                log.info("an interrupted stream in %s had ended (%s); updating its message", thread.channel, exc)
        if live is not None:
            extends = text.startswith(live.shown)
            delta = text[len(live.shown):] if extends else ""
            try:
                await translated(self._client.chat_stopStream(channel=thread.channel, ts=ts,
                                                              markdown_text=delta or None))
            except RateLimited:
                self._live[ts] = live  # the core waits, then ends it again
                raise
            except DeliveryFailed as exc:  # Slack ended it already (it expired): the message stays
                log.info("the stream in %s had ended (%s); updating its message instead", thread.channel, exc)
            else:
                if extends:
                    return ts
        await self._update(thread, ts, message)
        return ts
