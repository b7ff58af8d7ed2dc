"""The Slack workspace as a ``Surface``: each thread is one conversation (``slack:<team>:<channel>:<ts>``).

Every reply goes into the conversation's thread. Text is shown as a ``markdown`` block (standard
Markdown, 12,000 characters a message) with a plain ``text`` fallback (``render.SlackFormatter``).
Where Slack allows it, the piece being written is a native stream (``streaming``); elsewhere the core
sends and edits. A message's ``origin`` is its ``Asker`` (who wrote it, and its ts): a stream in a
channel is for that person, and the working reaction goes on that message; a message replayed after
a restart has none, so its answer is sent and edited. Answers only the asker needs (status, help, a
refusal) are ephemeral (``chat.postEphemeral``). The working indicator is the assistant status, else
a reaction (``indicator``). The rest of an answer too long to show is uploaded into the thread as a
file (``files_upload_v2``).

Slack's failures become the core's delivery errors (``errors``); a bot token Slack no longer
accepts also ends the run (``revoked``), since nothing can be delivered until an operator acts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from core.surface_api import (
    Button,
    Capabilities,
    DeliveryError,
    DeliveryFailed,
    InboundMessage,
    Rendered,
    StartupError,
    SurfaceDefaults,
    SurfaceState,
    Text,
    rendered_as,
)
from surfaces.slack.errors import AUTH_ERRORS, SDK_FAILURES, delivery_error, error_code, message_ts
from surfaces.slack.indicator import WorkingIndicator
from surfaces.slack.keys import Asker, Thread, parse_key
from surfaces.slack.options import Timings
from surfaces.slack.posting import Orphan, Posting
from surfaces.slack.render import SlackFormatter, SlackMessage
from surfaces.slack.streaming import NativeStreams

__all__ = ["COMMANDS", "MAX_MESSAGE_LENGTH", "SURFACE_NAME", "SlackSurface"]

log = logging.getLogger("acp_relay.slack")

T = TypeVar("T")

SURFACE_NAME = "slack"
#: A ``markdown`` block takes 12,000 characters (all markdown blocks of one message together).
MAX_MESSAGE_LENGTH = 12_000
#: ``!`` commands, anchored at the start of a message (``foo !compact`` is a prompt); ``/compact`` is
#: also the slash command.
COMMANDS: Mapping[str, str] = MappingProxyType({
    "!new": "reset", "!compact": "compact", "/compact": "compact", "!stop": "stop", "!status": "status",
    "!model": "model", "!help": "help", "!sessions": "sessions", "!project": "project", "!agent": "agent",
    "!mode": "mode", "!steer": "steer",
})
_NOT_A_MEMBER = "user_not_in_channel"



class SlackSurface(SurfaceDefaults):
    """The ``Surface`` the engine calls; a message's ``Asker`` comes back with its reply (``origin``)."""

    name = SURFACE_NAME
    commands = COMMANDS
    formatter = SlackFormatter()

    def __init__(self, client: AsyncWebClient, *, timings: Timings | None = None, token_env: str = "",
                 state: SurfaceState | None = None, bot_user: str = "") -> None:
        """``state`` (the relay's store) keeps the marks that let a restart take up a message Slack made
        for a killed relay (``posting``); ``bot_user`` is the app's member id, to know its messages."""
        timings = timings or Timings()
        self.client = client
        self.capabilities = Capabilities(
            max_message_length=MAX_MESSAGE_LENGTH, can_edit=True, can_delete=True,
            can_stream_natively=True, can_buttons=True, stop_button=True, can_typing=True,
            rate_limit=timings.rate_limit, typing_refresh_s=timings.typing_refresh_s,
            rollover_after_s=timings.rollover_after_s, max_file_bytes=100 * 1024 * 1024)
        self._no_stream = dataclasses.replace(self.capabilities, can_stream_natively=False)
        self._streams = NativeStreams(client, self._update)
        self._indicator = WorkingIndicator(client)
        self.posting = Posting(client, state, bot_user)
        self._token_env = token_env
        #: Set when Slack stops accepting the bot token: the run cannot go on.
        self.revoked: asyncio.Future[StartupError] = asyncio.get_running_loop().create_future()

    # -- capabilities -----------------------------------------------------------------------

    def capabilities_for(self, conversation_key: str, origin: object | None = None) -> Capabilities:
        """Native streaming only where Slack allows it and, in a channel, for a known asker (``origin``)."""
        try:
            thread = parse_key(conversation_key)
        except ValueError:
            return self._no_stream
        if self._streams.available(thread.channel) and (thread.is_dm or isinstance(origin, Asker)):
            return self.capabilities
        return self._no_stream

    def rate_key(self, conversation_key: str) -> str:
        """Threads of one channel share its pace."""
        try:
            thread = parse_key(conversation_key)
        except ValueError:
            return conversation_key
        return f"{SURFACE_NAME}:{thread.team}:{thread.channel}"

    # -- delivering -------------------------------------------------------------------------

    def _thread(self, conversation_key: str) -> Thread:
        try:
            return parse_key(conversation_key)
        except ValueError as exc:
            raise DeliveryFailed(str(exc)) from None

    async def _api(self, call: Awaitable[T]) -> T:
        """Await a Web API call (or a helper making them); Slack's failure becomes a delivery error."""
        try:
            return await call
        except DeliveryError as exc:
            self._note_auth(exc.__cause__)
            raise
        except SDK_FAILURES as exc:
            self._note_auth(exc)
            raise delivery_error(exc) from exc

    def _note_auth(self, exc: BaseException | None) -> None:
        code = error_code(exc) if exc is not None else ""
        if code in AUTH_ERRORS and not self.revoked.done():
            log.error("Slack no longer accepts the bot token (%s)", code)
            self.revoked.set_result(StartupError(
                f"Slack no longer accepts the bot token in ${self._token_env or 'SLACK_BOT_TOKEN'} ({code}); "
                "check surfaces.slack.bot_token_env"))

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        """Post into the conversation's thread; returns the message ts."""
        thread, shown = self._thread(conversation_key), rendered_as(message, SlackMessage)
        extra: dict[str, Any] = {"mrkdwn": False} if shown.plain else {}

        async def post() -> str:
            response = await self._api(self.client.chat_postMessage(
                channel=thread.channel, thread_ts=thread.thread_ts, unfurl_links=False, unfurl_media=False,
                **shown.payload(buttons), **extra))
            return message_ts(response, "ts", "chat.postMessage")

        return await self.posting.new(thread, False, post, lambda orphan: self._adopt(thread, orphan, shown, buttons))

    async def _adopt(self, thread: Thread, orphan: Orphan, shown: SlackMessage,
                     buttons: tuple[Button, ...] = ()) -> str:
        """Write ``shown`` into the message a killed relay's call made (stopping it first if a stream)."""
        if orphan.stream:
            await self._api(self._streams.stop_orphan(thread, orphan.ts))
        await self._update(thread, orphan.ts, shown, buttons)
        return orphan.ts

    async def reply(self, message: InboundMessage, answer: Rendered, *, buttons: tuple[Button, ...] = (),
                    private: bool = False) -> str:
        """Answer in the thread; ``private``: only its sender sees it (ephemeral)."""
        if not private:
            return await self.send(message.conversation_key, answer, buttons=buttons)
        thread = self._thread(message.conversation_key)
        try:
            response = await self._api(self.client.chat_postEphemeral(
                channel=thread.channel, user=message.user_id, thread_ts=thread.thread_ts,
                **rendered_as(answer, SlackMessage).payload(buttons)))
        except DeliveryFailed as exc:
            if error_code(exc.__cause__ or exc) != _NOT_A_MEMBER:
                raise
            return await self.send(message.conversation_key, answer, buttons=buttons)
        return message_ts(response, "message_ts", "chat.postEphemeral")

    async def send_file(self, conversation_key: str, name: str, data: bytes, *, caption: Rendered,
                        fallback: Rendered, reply_to: str | None = None) -> str:
        """Upload the file into the thread (the rest of an answer too long to show); returns its file id."""
        thread = self._thread(conversation_key)
        response = await self._api(self.client.files_upload_v2(
            channel=thread.channel, thread_ts=thread.thread_ts, content=data, filename=name, title=name,
            initial_comment=rendered_as(caption, SlackMessage).markdown))
        file_id = (response.get("file") or {}).get("id")
        if not file_id:
            raise DeliveryFailed("slack: files.completeUploadExternal answered without a file id")
        return str(file_id)

    async def tell(self, thread: Thread, user: str, text: str) -> None:
        """A short ephemeral answer to ``user`` (a button press); a failure is only logged."""
        shown = self.formatter.render((Text(text),))
        try:
            await self._api(self.client.chat_postEphemeral(channel=thread.channel, user=user,
                                                           thread_ts=thread.thread_ts, **shown.payload()))
        except DeliveryError as exc:
            log.info("could not answer a button press in %s: %s", thread.channel, exc)

    async def _update(self, thread: Thread, ts: str, message: SlackMessage, buttons: tuple[Button, ...] = ()) -> None:
        await self._api(self.client.chat_update(channel=thread.channel, ts=ts, **message.payload(buttons)))

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        """Replace a message's text and buttons (Slack takes an identical update without complaint)."""
        await self._update(self._thread(conversation_key), message_id, rendered_as(message, SlackMessage), buttons)

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """Remove a message the reply no longer needs."""
        thread = self._thread(conversation_key)
        await self._api(self.client.chat_delete(channel=thread.channel, ts=message_id))

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        """The assistant status (or the reaction on the asker's message) that says the agent is working."""
        thread = self._thread(conversation_key)
        message_ts = origin.ts if isinstance(origin, Asker) else None
        await self._api(self._indicator.show(thread, active, message_ts))

    async def stream(self, conversation_key: str, stream_id: str | None, message: Rendered, *,
                     reply_to: str | None = None, origin: object | None = None) -> str:
        """Start (for the asker, ``origin``) or grow a native stream showing ``message`` (the whole piece so far)."""
        thread, shown = self._thread(conversation_key), rendered_as(message, SlackMessage)
        if stream_id is None:
            asker = origin.user if isinstance(origin, Asker) else None
            return await self.posting.new(thread, True, lambda: self._api(self._streams.start(thread, shown, asker)),
                                          lambda orphan: self._adopt_stream(thread, orphan, shown))
        await self._api(self._streams.append(stream_id, shown))
        return stream_id

    async def _adopt_stream(self, thread: Thread, orphan: Orphan, shown: SlackMessage) -> str:
        ts = await self._adopt(thread, orphan, shown)
        self._streams.adopt(thread, ts)
        return ts

    async def end_stream(self, conversation_key: str, stream_id: str, message: Rendered) -> str | None:
        """Stop the stream: its message shows ``message`` as an ordinary message (returned)."""
        shown = rendered_as(message, SlackMessage)
        return await self._api(self._streams.stop(self._thread(conversation_key), stream_id, shown))
