"""A running Telegram surface: PTB's Application, the receive loop (polling or webhook), the intake.

The Application (built with ``updater(None)``: the relay polls itself, see ``polling``) owns the
bot and its HTTP connections. ``hello`` is getMe (once: the token checked, the bot's @username
learnt) and the command menu (``setMyCommands``). An invalid token is a ``StartupError``, at start
or later; anything else that fails is logged and retried by the ``Receiver``.
"""

from __future__ import annotations

import asyncio
import logging

from telegram import BotCommand
from telegram.error import InvalidToken, TelegramError
from telegram.ext import Application, ApplicationBuilder

from core.surface_api import AnswerUnreadable, DeliveryError, Host, StartupError, redact
from surfaces.telegram.answers import Answers, listen
from surfaces.telegram.errors import NoSuchMethod, delivery_errors
from surfaces.telegram.intake import Intake
from surfaces.telegram.polling import ALLOWED_UPDATES, Poller, Sleep
from surfaces.telegram.settings import TelegramConfig
from surfaces.telegram.surface import TelegramSurface
from surfaces.telegram.webhook import Webhook, webhook_path
from surfaces.telegram.wording import COMMAND_MENU, token_refused, unreachable, unreadable_answer

__all__ = ["IN_FLIGHT", "TelegramRelay", "build_application"]

log = logging.getLogger("acp_relay.telegram")

#: Where the Bot API is when ``api_base_url`` is not set.
DEFAULT_SERVER = "https://api.telegram.org"
#: Bot API calls in flight at once; the others wait their turn, in order.
IN_FLIGHT = 32
#: Telegram's answer to the last ``getUpdates`` before shutting down is not worth a long wait.
_CONFIRM_WAIT_S = 2.0


def build_application(token: str, settings: TelegramConfig) -> Application:  # type: ignore[type-arg]
    """PTB's Application for ``token``, pointed at ``api_base_url`` when one is set."""
    # The Answers request notes each answer, for the answers PTB cannot read (see ``answers``).
    builder = (ApplicationBuilder().token(token).updater(None).request(Answers(in_flight=IN_FLIGHT))
               .get_updates_request(Answers(in_flight=1)))
    if settings.api_base_url:
        root = settings.api_base_url.rstrip("/")
        builder = builder.base_url(f"{root}/bot").base_file_url(f"{root}/file/bot")
    return builder.build()


class TelegramRelay:
    """What ``launch`` returns (a ``Launched``)."""

    def __init__(self, app: Application, surface: TelegramSurface, intake: Intake,  # type: ignore[type-arg]
                 settings: TelegramConfig, host: Host, *, webhook_secret: str | None = None,
                 sleep: Sleep = asyncio.sleep) -> None:
        self.app = app
        self.surface = surface
        self.intake = intake
        self.settings = settings
        self.host = host
        self._stopping = False  # the relay stops: a poll cancelled now confirms what is stored first
        self.poller: Poller | None = None
        self.webhook: Webhook | None = None
        self._webhook_secret = webhook_secret
        if settings.mode == "webhook" and webhook_secret is not None and settings.webhook_url:
            self.webhook = Webhook(app.bot, intake, webhook_secret, webhook_path(settings.webhook_url),
                                   state=host.state, tasks=host.tasks, shared=host.shared)
        else:
            self.poller = Poller(app.bot, host.state, intake, timeout_s=settings.poll_timeout_s,
                                 token_env=settings.token_env, sleep=sleep)
        self.receiver = host.receiver(self._connect)
        self._menu_set = False

    @property
    def server(self) -> str:
        """The Bot API server's root, for the operator."""
        return (self.settings.api_base_url or DEFAULT_SERVER).rstrip("/")

    async def hello(self) -> None:
        """getMe (the first time it answers) and the command menu. ``StartupError`` for a token the
        server refuses or an answer PTB cannot read (no retry reads it better); ``ConnectionError``
        naming the server when it cannot be reached (the receiver tries again)."""
        try:
            with listen() as answer:
                await self.app.initialize()
        except InvalidToken:  # PTB's message quotes the token: it never goes further
            raise StartupError(token_refused(self.settings.token_env)) from None
        except Exception as exc:
            if answer.reached:
                raise StartupError(unreadable_answer(self.server, "getMe", type(exc).__name__)) from exc
            if isinstance(exc, TelegramError):
                raise ConnectionError(unreachable(self.server, redact(str(exc)) or type(exc).__name__)) from exc
            raise
        if self.intake.me is None:
            self.intake.identify(self.app.bot.bot)
        if not self._menu_set:
            try:
                with delivery_errors("setMyCommands"):
                    await self.app.bot.set_my_commands([BotCommand(c, d) for c, d in COMMAND_MENU])
                self._menu_set = True
            except AnswerUnreadable:
                self._menu_set = True  # the server took it
            except NoSuchMethod:
                self._menu_set = True  # never asked again in this run
                self.surface.lacks("setMyCommands", "the chat shows no command menu")
            except DeliveryError as exc:  # a missing menu is a nicety lost, never a reason not to serve
                log.warning("could not set the Telegram command menu: %s", exc)

    async def start(self) -> None:
        """Serve the webhook (if any), check the token, and start receiving."""
        if self.webhook is not None:
            await self.webhook.start(self.settings.webhook_host, self.settings.webhook_port)
        try:
            await self.hello()
        except ConnectionError as exc:  # not reachable yet: the receiver keeps trying, logging each failure
            log.warning("%s; retrying", exc)
        self.receiver.start()

    async def _connect(self) -> None:
        await self.hello()
        bot = self.app.bot
        if self.poller is not None:
            await self.host.exclusive("poller", self._poll)  # one relay polls; the others stand by
            return
        assert self.webhook is not None and self.settings.webhook_url
        await bot.set_webhook(self.settings.webhook_url, secret_token=self._webhook_secret,
                              allowed_updates=list(ALLOWED_UPDATES))
        await asyncio.get_running_loop().create_future()  # Telegram posts; nothing to poll

    async def _poll(self) -> None:
        assert self.poller is not None
        await self.app.bot.delete_webhook()  # getUpdates is refused while a webhook is set
        try:
            await self.poller.poll()
        except asyncio.CancelledError:
            if self._stopping:  # not a lease taken over: this relay is still the one polling
                await self._confirm(self.poller)
            raise

    async def _confirm(self, poller: Poller) -> None:
        """Tell Telegram what is stored, while this relay still holds the poller (relays sharing a store:
        confirmed after the next relay began polling, that getUpdates would end its poll with 409)."""
        try:
            async with asyncio.timeout(_CONFIRM_WAIT_S):
                await poller.confirm()
        except (TelegramError, TimeoutError) as exc:  # the next start confirms it instead
            log.info("could not confirm the last updates to Telegram: %s", exc)

    async def stop_receiving(self) -> None:
        """No more updates: stop polling (telling Telegram what is stored) or serving the webhook."""
        self._stopping = True
        await self.receiver.stop()
        if self.webhook is not None:
            await self.webhook.stop()

    async def fatal(self) -> StartupError:
        """Returns when Telegram refuses the token (it was revoked while running)."""
        return await self.receiver.fatal()

    async def close(self) -> None:
        """After the engine has closed: the bot's connections."""
        await self.app.shutdown()
