"""Starting the Discord surface for ``acp-relay run`` (``launch``) and checking its token (``doctor``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import aiohttp
import discord
from discord.http import Route

from core.surface_api import Capabilities, Host, Receiver, StartupError, TaskSet, secret
from surfaces.discord.catchup import CatchUp
from surfaces.discord.channels import KnownChannels
from surfaces.discord.commands import SlashCommands
from surfaces.discord.gateway import Events, Gateway, RelayClient, use_endpoints
from surfaces.discord.inbound import Router
from surfaces.discord.settings import DiscordConfig, check, endpoint_problems
from surfaces.discord.surface import CAPABILITIES, DiscordSurface
from surfaces.discord.views import Presses, token_of

__all__ = ["CAPABILITIES", "DiscordRelay", "DiscordSurface", "doctor", "launch"]

log = logging.getLogger("acp_relay.discord")

#: How long ``launch`` waits for Discord before the relay starts anyway (it keeps trying).
STARTUP_WAIT_S = 15.0
DOCTOR_TIMEOUT_S = 15.0


class DiscordRelay:
    """A running Discord surface (what ``launch`` returns)."""

    def __init__(self, client: RelayClient, surface: DiscordSurface, router: Router, presses: Presses,
                 commands: SlashCommands, catch_up: CatchUp, receiver: Receiver, tasks: TaskSet) -> None:
        self.client = client
        self.surface = surface
        self.router = router
        self.presses = presses
        self.commands = commands
        self.catch_up = catch_up
        self.receiver = receiver
        self.tasks = tasks

    async def stop_receiving(self) -> None:
        """Hear nothing more: what is written from now on is fetched after the next start."""
        self.presses.receiving = False
        self.router.stop()  # live messages still waiting for a catch-up see it is over, and drop
        self.client.stopping = True
        await self.tasks.close()
        await self.receiver.stop()

    async def fatal(self) -> StartupError:
        """Returns when Discord refused the token or the intent."""
        return await self.receiver.fatal()

    async def close(self) -> None:
        """Close the gateway and the REST session (after the engine delivered its final answers)."""
        if not self.client.stopping:
            await self.stop_receiving()
        await self.client.close()


async def doctor(settings: DiscordConfig) -> list[tuple[bool, str]]:
    """``acp-relay doctor``: is the token there, and does Discord take it (``GET /users/@me``)?

    Lines name the environment variable and the bot's name, never the token.
    """
    env = settings.token_env
    token = secret(env)
    if token is None:
        return [(False, f"${env} MISSING")]
    if problems := endpoint_problems(settings):
        return [(False, f"surfaces.discord.{path}: {problem}") for path, problem in problems]
    use_endpoints(settings.api_base_url, settings.gateway_url)
    url = f"{Route.BASE}/users/@me"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=DOCTOR_TIMEOUT_S)) as session, \
                session.get(url, headers={"Authorization": f"Bot {token.strip()}"}) as response:
            body = await response.json(content_type=None) if response.status == 200 else {}
            status = response.status
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
        return [(False, f"${env} present; Discord did not answer /users/@me at {Route.BASE} ({type(exc).__name__})")]
    if status == 401:
        return [(False, f"${env} present, but Discord REFUSED it (401 Unauthorized on /users/@me)")]
    if status != 200:
        return [(False, f"${env} present; Discord answered {status} to /users/@me")]
    return [(True, f"${env} present; /users/@me: bot {body.get('username', '?')} (id {body.get('id', '?')})")]


async def launch(host: Host, settings: DiscordConfig, *, capabilities: Capabilities = CAPABILITIES,
                 guild_ready_timeout: float = 2.0, first_reconnect_delay_s: float = 1.0,
                 identify_delay_s: float = 5.0, startup_wait_s: float = STARTUP_WAIT_S,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> DiscordRelay:
    """Connect to Discord and attach the surface to ``host``.

    Waits (up to ``startup_wait_s``) for the first gateway session and for what was written while the
    relay was away to be handed over: the core, not started yet, journals those messages and
    answers them in order once it starts. Raises ``StartupError`` when the token variable is unset,
    an endpoint is malformed, or Discord refuses the token or the intent meanwhile; a refusal later
    ends the run through ``fatal``. A Discord that is unreachable at start is retried, not fatal.
    """
    if problems := check(settings):
        raise StartupError(problems[0][1])
    token = secret(settings.token_env)
    assert token is not None  # check() said so
    use_endpoints(settings.api_base_url, settings.gateway_url)
    client = RelayClient(guild_ready_timeout=guild_ready_timeout, identify_delay_s=identify_delay_s)
    surface = DiscordSurface(client, capabilities)
    host.attach(surface, settings.allowed_user_ids)
    known = KnownChannels(host.state)
    router = Router(host, client, known, allowed_channel_ids=settings.allowed_channel_ids, sleep=sleep)
    presses = Presses(host)
    catch_up = CatchUp(client, router, known, host, per_channel=host.queue_limit)
    commands = SlashCommands(client, host, surface, router, guild_ids=settings.guild_ids)
    tasks = host.tasks

    async def on_interaction(interaction: discord.Interaction) -> None:
        token_ = token_of(interaction)
        if token_ is not None:  # slash commands are the command tree's
            await presses.on_press(interaction, token_)

    caught_up = asyncio.Event()

    async def catch_up_once() -> None:
        try:
            await catch_up.run()
        finally:
            router.release()
            caught_up.set()

    async def on_ready() -> None:
        tasks.spawn(catch_up_once(), name="discord-catch-up")

    def on_connect() -> None:
        router.hold()
        catch_up.mark()

    client.events = Events(router.on_message, on_interaction, on_ready, commands.sync, on_connect,
                           router.unreadable, router.on_edit, router.on_delete)
    gateway = Gateway(client, token, settings.token_env)

    async def receive() -> None:
        await gateway.login()  # every relay logs in: any relay sends
        await host.exclusive("gateway", gateway.run)  # relays sharing a store: one holds the gateway

    receiver = host.receiver(receive, first_delay_s=first_reconnect_delay_s, sleep=sleep)
    receiver.start()
    running = DiscordRelay(client, surface, router, presses, commands, catch_up, receiver, tasks)
    ready = asyncio.create_task(caught_up.wait(), name="discord-caught-up")
    fatal = asyncio.create_task(receiver.fatal(), name="discord-fatal")
    done, _ = await asyncio.wait({ready, fatal}, timeout=startup_wait_s, return_when=asyncio.FIRST_COMPLETED)
    for task in (ready, fatal):
        task.cancel()
    await asyncio.wait({ready, fatal})
    if fatal in done:
        await running.close()
        raise fatal.result()
    if not done:
        log.warning("Discord did not answer within %.0f s; the relay starts and keeps trying", startup_wait_s)
    return running
