"""The slash commands /new, /compact, /stop, /status, /model and /help.

Each interaction is deferred at once (Discord shows "is thinking…" and waits up to 15 minutes; an
answer later than 3 seconds without a deferral fails), then handed to the engine as the inbound
message ``/<name> [argument]`` whose id is the interaction's id; the core's answer comes back
through ``Surface.reply``, which answers the interaction. /status and /help are deferred ephemeral
(only the asker sees them), as the core answers them privately, and so is whatever a person not on
the allow-list (or in a channel the relay does not serve) runs. Whatever the engine did, the
interaction is closed when it returns: a /compact that went to the agent says so, a /stop says
"Stopped.", and an interaction with nothing to say loses its "is thinking…" response; none is
left hanging.

Commands are synced when the client logs in: to each guild in ``surfaces.discord.guild_ids``
(available at once there), else globally (Discord may take a while to show new global commands).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Coroutine
from typing import Any

import discord
from discord import app_commands

from core.surface_api import Host, InboundMessage
from surfaces.discord import wording
from surfaces.discord.errors import PLATFORM_ERRORS
from surfaces.discord.inbound import Router
from surfaces.discord.keys import SURFACE_NAME
from surfaces.discord.surface import DiscordSurface

__all__ = ["SLASH_COMMANDS", "SlashCommands"]

log = logging.getLogger("acp_relay.discord.commands")

#: (name, description) in the order Discord lists them.
SLASH_COMMANDS: tuple[tuple[str, str], ...] = (
    ("new", "Start a new conversation (the agent forgets this one)"),
    ("compact", "Shrink the conversation so it fits the model's context"),
    ("stop", "Stop the answer that is running"),
    ("status", "Show agent, model, folder, session, context and queue"),
    ("model", "List the models, or switch to one"),
    ("sessions", "The agent's sessions in this folder: continue one here"),
    ("project", "List the projects, or switch to one"),
    ("agent", "List the agents, or switch to one"),
    ("mode", "List the agent's modes and options, or switch to one"),
    ("help", "Show the commands"),
)
#: Commands that take a name (left empty: the list), and how Discord describes it.
_NAMED = {"model": "The model to switch to (leave empty to list them)",
          "sessions": "The id of a session to continue (leave empty to list them)",
          "project": "The project to switch to (leave empty to list them)",
          "agent": "The agent to switch to (leave empty to list them)",
          "mode": "The mode to switch to (leave empty to list them)"}
#: Deferred ephemeral: the core answers these privately (the first answer is as private as the deferral).
_PRIVATE = frozenset({"status", "help"})
#: What closes an interaction the engine did not answer itself.
_CLOSING = {"compact": wording.COMPACT_SENT, "stop": wording.STOP_DONE}

Callback = Callable[..., Coroutine[Any, Any, None]]


class SlashCommands:
    """The command tree of one client, and what each command does."""

    def __init__(self, client: discord.Client, host: Host, surface: DiscordSurface, router: Router, *,
                 guild_ids: Collection[int]) -> None:
        self.host = host
        self.surface = surface
        self.router = router
        self.guild_ids = tuple(guild_ids)
        self.tree = app_commands.CommandTree(client)
        for name, description in SLASH_COMMANDS:
            self.tree.add_command(app_commands.Command(name=name, description=description,
                                                       callback=self._callback(name)))

    def _callback(self, name: str) -> Callback:
        if name in _NAMED:
            command_name = name

            @app_commands.describe(name=_NAMED[name])
            async def named(interaction: discord.Interaction, name: str | None = None) -> None:
                await self.run(interaction, command_name, name or "")
            return named

        async def command(interaction: discord.Interaction) -> None:
            await self.run(interaction, name)
        return command

    async def sync(self) -> None:
        """Register the commands with Discord (per guild when configured: they appear at once there)."""
        try:
            if not self.guild_ids:
                synced = await self.tree.sync()
                log.info("synced %d Discord commands globally", len(synced))
                return
            for guild_id in self.guild_ids:
                guild = discord.Object(guild_id)
                self.tree.copy_global_to(guild=guild)
                synced = await self.tree.sync(guild=guild)
                log.info("synced %d Discord commands to guild %s", len(synced), guild_id)
        except discord.Forbidden as exc:
            log.warning("Discord refused the slash commands (%s): invite the bot with the applications.commands "
                        "scope (see the README); the ! commands work meanwhile", exc)
        except PLATFORM_ERRORS as exc:
            log.warning("could not sync the Discord slash commands (%s); the ! commands work meanwhile", exc)

    async def run(self, interaction: discord.Interaction, name: str, argument: str = "") -> None:
        """Defer, hand to the engine, and close the interaction whatever happened."""
        try:
            await self._run(interaction, name, argument)
        except PLATFORM_ERRORS as exc:
            log.warning("could not answer /%s in channel %s: %s", name, interaction.channel_id, exc)

    async def _run(self, interaction: discord.Interaction, name: str, argument: str) -> None:
        if not self.router.receiving:
            await interaction.response.send_message(wording.RESTARTING, ephemeral=True)
            return
        key = self.router.interaction_key(interaction)
        user_id = str(interaction.user.id)
        ephemeral = name in _PRIVATE or key is None or not self.host.permits(user_id)
        await interaction.response.defer(ephemeral=ephemeral, thinking=True)
        if key is None:
            await interaction.edit_original_response(content=wording.CHANNEL_NOT_ALLOWED)
            return
        live = self.surface.interactions.open(interaction, ephemeral=ephemeral)
        message = InboundMessage(SURFACE_NAME, key, user_id, f"/{name} {argument}".rstrip(), str(interaction.id),
                                 display_name=interaction.user.display_name, origin=live)
        try:
            await self.host.handle(message)  # answered through the interaction before it is closed
        finally:
            await live.close(_CLOSING.get(name))

    def commands(self) -> list[dict[str, Any]]:
        """The commands as Discord receives them (for tests and the README)."""
        return [c.to_dict(self.tree) for c in self.tree.get_commands()]
