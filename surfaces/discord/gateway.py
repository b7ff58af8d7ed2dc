"""The discord.py client: where it connects, what it asks for, and what ends it for good.

The client asks for the Message Content intent (privileged: it is enabled per bot in the Developer
Portal), without which messages in threads would arrive empty. discord.py reconnects by itself
(resuming the session, so missed events are replayed); every disconnect and reconnect is logged
here, so a bot that stopped hearing is never silent about it. What no reconnect can fix ends the
run with one sentence (``StartupError``): a token Discord refuses (at login, or close code 4004) and
a refused intent (close code 4014).

``use_endpoints`` points discord.py at ``api_base_url`` / ``gateway_url``. discord.py keeps both as
class attributes (``Route.BASE``, ``DiscordWebSocket.DEFAULT_GATEWAY``), so they hold for the whole
process: one relay serves one Discord.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from core.surface_api import ReconnectLater, StartupError
from surfaces.discord import wording
from surfaces.discord.answers import listen, note
from surfaces.discord.errors import retry_after
from surfaces.discord.ratelimits import amortize

__all__ = ["FATAL_CLOSE_CODES", "Events", "Gateway", "RelayClient", "use_endpoints"]

log = logging.getLogger("acp_relay.discord.gateway")

#: Close codes discord.py does not reconnect after; each is a configuration fact.
FATAL_CLOSE_CODES = frozenset({4004, 4010, 4011, 4012, 4013, 4014})
#: A session whose READY cannot be read is no session: that still ends the connection.
_UNGUARDED = frozenset({"READY"})
#: A 429 asking for a longer wait than this is handed to the core (which holds the channel), instead
#: of discord.py sleeping inside the call (30 s is the least discord.py accepts).
MAX_RATELIMIT_WAIT_S = 30.0


def use_endpoints(api_base_url: str | None, gateway_url: str | None) -> None:
    """Point discord.py at a compatible server (global for the process; None keeps Discord's)."""
    if api_base_url:
        Route.BASE = api_base_url.rstrip("/")
    if gateway_url:
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


async def _ignore(*_event: object) -> None:
    return None


async def _nothing() -> None:
    return None


@dataclass
class Events:
    """What the client calls on the relay (each runs in the task discord.py starts for the event)."""

    on_message: Callable[[discord.Message], Awaitable[None]]
    on_interaction: Callable[[discord.Interaction], Awaitable[None]]
    on_ready: Callable[[], Awaitable[None]]
    setup: Callable[[], Awaitable[None]]
    #: A new session's READY arrived (called before any event of that session is handled).
    on_connect: Callable[[], None] = lambda: None
    #: A gateway event discord.py could not parse: (event name, its id or "", what was wrong).
    on_unreadable: Callable[[str, str, str], None] = lambda event, ident, why: None
    #: A person's message changed (MESSAGE_UPDATE): its words edited, or only its link previews.
    on_edit: Callable[[discord.Message], Awaitable[None]] = _ignore
    #: A message was deleted (MESSAGE_DELETE): its id, its channel's and its server's (None in a DM); who
    #: wrote or deleted it is not said.
    on_delete: Callable[[int, int, int | None], Awaitable[None]] = _ignore


def _people_only(parse: Callable[[Any], None]) -> Callable[[Any], None]:
    """MESSAGE_CREATE's and MESSAGE_UPDATE's parsers for messages a bot wrote skip them before discord.py
    reads them: the relay answers people only (``Router.is_person``), and most such messages are its own
    answers coming back, an update for each edit of a streamed answer. Read, each cost a ``Message`` and
    a task for its event, in a burst while other conversations still waited for their first words. An
    author that is no user object still goes to the parser (which skips it as unreadable, logged once)."""

    def parse_people(data: Any) -> None:
        author = data.get("author") if isinstance(data, dict) else None
        if isinstance(author, dict) and author.get("bot") is True:
            return
        parse(data)

    return parse_people


class RelayClient(discord.Client):
    """A ``discord.Client`` with the relay's intents, handing its events to ``Events``."""

    def __init__(self, events: Events | None = None, *, guild_ready_timeout: float = 2.0,
                 heartbeat_timeout: float = 60.0, identify_delay_s: float = 5.0) -> None:
        intents = discord.Intents.default()
        intents.message_content = True
        # The relay has no voice: discord.py's warnings about voice libraries would only confuse.
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        super().__init__(intents=intents, guild_ready_timeout=guild_ready_timeout,
                         heartbeat_timeout=heartbeat_timeout, max_ratelimit_timeout=MAX_RATELIMIT_WAIT_S,
                         chunk_guilds_at_startup=False, max_messages=None)
        # (max_messages None: no cache of messages. The relay reads none from it, and discord.py walks
        # its 1,000 messages for every edit, deletion or reaction Discord reports: each edit of an
        # answer comes back as one, and the relay's own messages are not in it to be found early.)
        self.events = events or Events(_ignore, _ignore, _nothing, _nothing)
        self.stopping = False
        self.identify_delay_s = identify_delay_s
        self._guard_parsers()
        self.http.request = note(self.http.request)  # type: ignore[method-assign]  # answers it cannot read
        amortize(self.http)  # its walk over every rate-limit record, once they doubled, not per new one

    def _guard_parsers(self) -> None:
        """A gateway event discord.py cannot parse must not end the connection: the exception would
        leave ``connect``, the session would resume, Discord would send the event again, and so on.
        Each parser (the table the gateway looks events up in) skips what it cannot read instead."""
        parsers: dict[str, Callable[[Any], None]] = self._connection.parsers

        def guarded(event: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
            def parse_or_skip(data: Any) -> None:
                try:
                    parse(data)
                except Exception as exc:  # whatever the parser raises for data it does not expect
                    ident = str(data.get("id") or "") if isinstance(data, dict) else ""
                    log.debug("discord.py could not parse %s %s", event, ident, exc_info=True)
                    self.events.on_unreadable(event, ident, type(exc).__name__)
            return parse_or_skip

        for event in ("MESSAGE_CREATE", "MESSAGE_UPDATE"):
            parsers[event] = _people_only(parsers[event])
        for event, parse in list(parsers.items()):
            if event not in _UNGUARDED:
                parsers[event] = guarded(event, parse)

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """Discord allows one IDENTIFY per five seconds: a session started again waits that long."""
        if not initial:
            await asyncio.sleep(self.identify_delay_s)

    async def setup_hook(self) -> None:
        """After each login, before the gateway connects: sync the slash commands."""
        await self.events.setup()

    async def on_connect(self) -> None:
        """READY of a new session (not a resume), before its servers and before its first message:
        discord.py runs this first among the events READY is followed by."""
        self.events.on_connect()

    async def on_ready(self) -> None:
        """A new gateway session (the first, or one Discord made us start again)."""
        log.info("Discord gateway ready as %s (%d servers)", self.user, len(self.guilds))
        await self.events.on_ready()

    async def on_resumed(self) -> None:
        """The session resumed after a disconnect: Discord replays what was missed."""
        log.warning("Discord gateway connection resumed")

    async def on_disconnect(self) -> None:
        """The gateway connection dropped; discord.py is reconnecting (unless the close was final)."""
        socket = getattr(self.ws, "socket", None)
        code = getattr(socket, "close_code", None)
        if not self.stopping and code not in FATAL_CLOSE_CODES:
            log.warning("Discord gateway connection lost (close code %s); reconnecting", code)

    async def on_message(self, message: discord.Message) -> None:
        """MESSAGE_CREATE, the bot's own messages included (the router skips them)."""
        await self.events.on_message(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        """MESSAGE_UPDATE of a person's message (no message is cached, so this is the only edit event)."""
        await self.events.on_edit(payload.message)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        """MESSAGE_DELETE (no message is cached, so this is the only deletion event)."""
        await self.events.on_delete(payload.message_id, payload.channel_id, payload.guild_id)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        """Every interaction; the command tree also sees slash commands, ``Events`` sees presses."""
        await self.events.on_interaction(interaction)


class Gateway:
    """The receive loop the core's ``Receiver`` supervises: log in once, then stay connected."""

    def __init__(self, client: RelayClient, token: str, token_env: str) -> None:
        self.client = client
        self._token = token
        self._token_env = token_env
        self._logged_in = False

    async def _forget_login(self) -> None:
        """A login that failed half-way: close the HTTP session it opened (the next login opens its own;
        discord.py would leave each one open, "Unclosed client session") and the connector with it."""
        try:
            await self.client.http.close()
        finally:
            self.client.http.connector = discord.utils.MISSING

    async def connect(self) -> None:
        """Runs while connected; ``StartupError`` for what no reconnect can fix."""
        await self.login()
        await self.run()

    async def login(self) -> None:
        """Log in once (the REST API: every relay sends); ``StartupError`` for a refused token."""
        if not self._logged_in:
            try:
                with listen() as answer:
                    await self.client.login(self._token)
            except BaseException as exc:
                await self._forget_login()
                if answer.returned and isinstance(exc, Exception) and not isinstance(exc, discord.DiscordException):
                    # Discord answered 2xx and discord.py could not read it: no retry reads it better
                    raise StartupError(wording.unreadable_answer(Route.BASE, answer.path, type(exc).__name__)) from exc
                if isinstance(exc, discord.LoginFailure):
                    raise StartupError(wording.close_code_text(4004, self._token_env)) from exc
                if isinstance(exc, discord.RateLimited):
                    raise ReconnectLater(exc.retry_after, "Discord rate limited the login") from exc
                if isinstance(exc, discord.HTTPException) and exc.status == 429:
                    raise ReconnectLater(retry_after(exc), "Discord rate limited the login") from exc
                raise
            self._logged_in = True

    async def run(self) -> None:
        """Stay on the gateway until the connection ends; cancelled, leave it (its websocket closed,
        so another relay can hold the gateway)."""
        try:
            await self.client.connect(reconnect=True)
        except asyncio.CancelledError:
            ws = self.client.ws
            if ws is not None and ws.open:
                await ws.close(code=1000)
            raise
        except discord.PrivilegedIntentsRequired as exc:
            raise StartupError(wording.close_code_text(4014, self._token_env)) from exc
        except discord.ConnectionClosed as exc:
            if exc.code in FATAL_CLOSE_CODES:
                raise StartupError(wording.close_code_text(exc.code, self._token_env)) from exc
            raise
        if self.client.is_closed() and not self.client.stopping:
            raise ConnectionError("the Discord client was closed")
