"""From a Telegram update to the core, the same way for long polling and for webhooks.

``take(update)`` returns once the update is safe to confirm to Telegram: a message is journaled
(``Host.submit``; the core handles it after the conversation's earlier messages); an update that
is not for the bot, or cannot be read, needs nothing. A store that cannot journal raises, so the
caller does not confirm the update and Telegram sends it again (its person is told so once, and the
relay offers it to the store again meanwhile: ``HeldMessages``).
Webhook posts may arrive side by side: each conversation's messages are taken in the order they came
(``Host.ordered``). A button press is answered with ``answerCallbackQuery`` on every path (no
spinner is left), with the core's short answer. A Stop pressed on a streaming draft ends its turn at
once (``Controls.stop``), not in line behind the messages that wait for that turn.

An album is journaled as its lead part (the one with the words): the other parts are noted
(``PART_PREFIX``), so an edit of one's caption is an edit of the album, not that part, late.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from telegram import Bot, CallbackQuery, Update, User
from telegram.error import TelegramError

from core.surface_api import Attachment, ControlFailed, HeldMessages, Host, InboundMessage, StoreError
from surfaces.telegram.inbound import Attached, Incoming, album_in, fetch_attached, message_in, press_in
from surfaces.telegram.keys import conversation_key
from surfaces.telegram.surface import TelegramSurface
from surfaces.telegram.wording import FILE_NOT_FETCHED, IMAGE_NOT_FETCHED, press_answer

__all__ = ["PART_KEEP_S", "PART_PREFIX", "Intake"]

log = logging.getLogger("acp_relay.telegram.intake")

#: The state rows naming the album each part of an album belongs to: ``part:<chat>:<message>`` -> its
#: lead part's message id (the album's, in the journal).
PART_PREFIX = "part:"
#: As long as the journal knows a message (an edit of one older is not looked up).
PART_KEEP_S = 7 * 24 * 3600.0


class Intake:
    """Hands updates to ``host``; ``ready`` is set once the bot knows who it is (getMe)."""

    def __init__(self, host: Host, bot: Bot, surface: TelegramSurface,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.host = host
        self.bot = bot
        self.surface = surface
        self.ready = asyncio.Event()
        self.me: User | None = None
        #: Messages the store refused: their person told once (Telegram sends each again and again), and
        #: each offered to the store again meanwhile, so it is answered as soon as it is taken.
        self._held = HeldMessages(host, "Telegram", sleep=sleep)

    def identify(self, me: User) -> None:
        """The bot's own user (getMe): mentions, replies and ``/cmd@name`` are matched against it."""
        self.me = me
        self.surface.identify(me.username)
        self.ready.set()

    async def take(self, update: Update) -> None:
        """Take ``update`` in; when this returns, Telegram may be told it was received."""
        await self.ready.wait()
        assert self.me is not None
        if update.callback_query is not None:
            self.host.tasks.spawn(self._press(update.callback_query), name="telegram-press")
            return
        if (stopped := update.api_kwargs.get("stopped_message_generation")) is not None:
            # (Not in line behind the conversation's messages: those wait for the very turn it ends.)
            self.host.tasks.spawn(self._stop(update.update_id, stopped), name="telegram-stop")
            return
        try:
            incoming = message_in(update, self.me)
        except Exception as exc:  # an update we cannot read must not block every update behind it
            self.reject(update.update_id, update.to_dict(), exc)
            return
        if incoming is None:
            return
        if update.edited_message is not None and update.edited_message.media_group_id:
            # A part of an album taken in: the album is edited (its words; its files were taken with it).
            lead = self.host.state.get(f"{PART_PREFIX}{incoming.message.edits}")
            if lead is not None:
                incoming = Incoming(dataclasses.replace(incoming.message, edits=lead))
        async with self.host.ordered(incoming.message.conversation_key):
            await self._take_message(incoming)

    def reject(self, update_id: int, data: Mapping[str, Any], exc: BaseException) -> None:
        """Give up on an update that cannot be read: logged once (what kind of update and what was
        wrong, never its text; the traceback at debug), stored as rejected, so it can be confirmed."""
        kind = next((k for k in data if k != "update_id"), "nothing")
        log.warning("skipped Telegram update %s (%s): it could not be read (%s)", update_id, kind,
                    type(exc).__name__)
        log.debug("update %s could not be read", update_id, exc_info=exc)
        self.host.reject(f"update:{update_id}", f"{kind}: {type(exc).__name__}")

    def unkept(self, update: Update, exc: StoreError) -> None:
        """A part of an album the store could not keep (its post is answered so that Telegram posts it
        again): its person is told once that it will be answered, as for a message the store refused."""
        if self.me is None:
            return
        try:
            incoming = message_in(update, self.me)
        except Exception:  # unreadable: nobody to tell
            return
        if incoming is not None:
            self._held.tell(incoming.message, exc)

    async def take_album(self, parts: Sequence[Update]) -> None:
        """Take in the parts of an album (an update each) as one message: the agent reads every part's
        caption and file, and answers once. When this returns, Telegram may be told of every part."""
        await self.ready.wait()
        assert self.me is not None
        messages = [u.message for u in parts if u.message is not None]
        incoming = album_in(messages, self.me)
        if incoming is None:
            return
        async with self.host.ordered(incoming.message.conversation_key):
            await self._take_message(incoming)
        lead = incoming.message.message_id
        state = self.host.state
        for message in messages:
            part = f"{message.chat.id}:{message.message_id}"
            if part != lead:
                state.set(f"{PART_PREFIX}{part}", lead)
        state.prune(PART_KEEP_S, PART_PREFIX)

    async def _take_message(self, incoming: Incoming) -> None:
        message = incoming.message
        if incoming.attached and self.host.permits(message.user_id):  # (a stranger's costs nothing)
            fetched = [got for attached in incoming.attached if (got := await self._fetch(message, attached))]
            message = dataclasses.replace(message, attachments=tuple(fetched))
            if not fetched and not message.text.strip():
                return  # nothing came to send (the person was told)
        refused = self._held.behind(message)
        if refused is not None:  # a message of its chat is held: this one waits behind it (not confirmed)
            raise refused.with_traceback(None)
        try:
            await self.host.submit(message)  # journaled once this returns
        except StoreError as exc:  # not confirmed: Telegram sends it again (journaled by then: a repeat)
            if self._held.refused(message, exc):
                raise

    async def _fetch(self, message: InboundMessage, attached: Attached) -> Attachment | None:
        """``attached``, downloaded; None when it could not be (its person is told so)."""
        try:
            fetched = await fetch_attached(self.bot, attached)
        except (TelegramError, RuntimeError) as exc:
            log.warning("could not fetch a %s in %s: %s", attached.kind, message.conversation_key, exc)
            fetched = None
        if fetched is None:
            said = IMAGE_NOT_FETCHED if attached.kind == "image" else FILE_NOT_FETCHED
            self.host.notify(message.conversation_key, said)
        return fetched

    async def _stop(self, update_id: int, stopped: Any) -> None:
        """The person pressed Stop on a draft (``MessageGenerationStopped``): the turn it streams ends, as
        the stop command ends it. A Stop of a draft whose answer ended meanwhile changes nothing; with
        relays sharing a store, the draft may be another relay's: the conversation's turn ends there."""
        try:
            chat, draft_id = int(stopped["chat"]["id"]), int(stopped["draft_id"])
            thread = stopped.get("message_thread_id")
            keys = [conversation_key(chat, int(thread)), conversation_key(chat)] if thread else [conversation_key(chat)]
        except (KeyError, TypeError, ValueError) as exc:
            self.reject(update_id, {"stopped_message_generation": None}, exc)
            return
        key = next((k for k in keys if self.surface.streams(k, draft_id)), None)
        if key is None and self.host.shared:
            key = keys[0]
        if key is None or not self.host.permits(str(chat)):  # (a private chat's id is its person's)
            log.info("a Stop pressed on draft %s in chat %s, which streams no more here", draft_id, chat)
            return
        try:
            await self.host.controls.stop(key)
        except ControlFailed as exc:  # the relay running it did not answer: said, as a stop command would
            self.host.notify(key, str(exc))

    async def _press(self, query: CallbackQuery) -> None:
        answer: str | None = None
        try:
            press = press_in(query)
            if press is not None:
                result = await self.host.press(press)
                answer = press_answer(result.text)
        except Exception:  # the tap is still answered below
            log.exception("a button press could not be handled")
        finally:
            try:
                await self.bot.answer_callback_query(query.id, text=answer)
            except TelegramError as exc:  # too old, or Telegram unreachable: the spinner times out itself
                log.info("could not answer a button press: %s", exc)
