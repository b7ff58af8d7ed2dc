"""From a Telegram update to the engine, the same way for long polling and for webhooks.

``take(update)`` returns once the update is safe to confirm to Telegram: a message is journaled
(``Engine.accept``), and what remains of its handling waits in its conversation's lane; an update
that is not for the bot, or cannot be read, needs nothing. A store that cannot journal raises,
so the caller does not confirm the update and Telegram sends it again. A button press is answered
with ``answerCallbackQuery`` on every path (no spinner is left), with the core's short answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from telegram import Bot, CallbackQuery, Update, User
from telegram.error import TelegramError

from core.engine.blocks import Text
from core.engine.lanes import Lanes
from core.engine.surface import DeliveryError, Inbound
from surfaces.telegram.inbound import Incoming, fetch_image, message_in, press_in
from surfaces.telegram.keys import SURFACE_NAME
from surfaces.telegram.surface import TelegramSurface
from surfaces.telegram.wording import IMAGE_NOT_FETCHED, press_answer

__all__ = ["Intake"]

log = logging.getLogger("acp_relay.telegram.intake")


class Intake:
    """Hands updates to ``engine``; ``ready`` is set once the bot knows who it is (getMe)."""

    def __init__(self, engine: Inbound, bot: Bot, surface: TelegramSurface) -> None:
        self.engine = engine
        self.bot = bot
        self.surface = surface
        self.lanes = Lanes(SURFACE_NAME)
        self.ready = asyncio.Event()
        self.me: User | None = None
        self._presses: set[asyncio.Task[None]] = set()
        self._order = asyncio.Lock()  # webhooks may arrive side by side; messages are taken in order

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
            task = asyncio.create_task(self._press(update.callback_query), name="telegram-press")
            self._presses.add(task)
            task.add_done_callback(self._presses.discard)
            return
        try:
            incoming = message_in(update, self.me)
        except Exception as exc:  # an update we cannot read must not block every update behind it
            self.reject(update.update_id, update.to_dict(), exc)
            return
        if incoming is None:
            return
        async with self._order:
            await self._take_message(incoming)

    def reject(self, update_id: int, data: Mapping[str, Any], exc: BaseException) -> None:
        """Give up on an update that cannot be read: logged once (what kind of update and what was
        wrong, never its text; the traceback at debug), stored as rejected, so it can be confirmed."""
        kind = next((k for k in data if k != "update_id"), "nothing")
        log.warning("skipped Telegram update %s (%s): it could not be read (%s)", update_id, kind,
                    type(exc).__name__)
        log.debug("update %s could not be read", update_id, exc_info=exc)
        self.engine.reject(SURFACE_NAME, f"update:{update_id}", f"{kind}: {type(exc).__name__}")

    async def _take_message(self, incoming: Incoming) -> None:
        message = incoming.message
        lost_image = False
        if incoming.image_file_id is not None and self.engine.permits(message.surface, message.user_id):
            try:
                image = await fetch_image(self.bot, incoming)
            except (TelegramError, RuntimeError) as exc:
                log.warning("could not fetch an image in %s: %s", message.conversation_key, exc)
                image = None
            lost_image = image is None
            if image is not None:
                message = dataclasses.replace(message, attachments=(image,))
        key = message.conversation_key
        if lost_image:
            self.lanes.put(key, lambda: self._say(key, IMAGE_NOT_FETCHED))
            if not message.text.strip():
                return
        then = self.engine.accept(message)  # journaled once this returns
        if then is not None:
            self.lanes.put(key, then)

    async def _say(self, key: str, text: str) -> None:
        try:
            await self.surface.send(key, self.surface.formatter.render((Text(text),), plain=True))
        except DeliveryError as exc:
            log.warning("could not tell %s: %s", key, exc)

    async def _press(self, query: CallbackQuery) -> None:
        answer: str | None = None
        try:
            press = press_in(query)
            if press is not None:
                result = await self.engine.handle_button(press)
                answer = press_answer(result.text)
        except Exception:  # the tap is still answered below
            log.exception("a button press could not be handled")
        finally:
            try:
                await self.bot.answer_callback_query(query.id, text=answer)
            except TelegramError as exc:  # too old, or Telegram unreachable: the spinner times out itself
                log.info("could not answer a button press: %s", exc)

    async def close(self) -> None:
        """Stop the lanes and the presses still being handled."""
        await self.lanes.close()
        presses = list(self._presses)
        for task in presses:
            task.cancel()
        if presses:
            await asyncio.wait(presses)
