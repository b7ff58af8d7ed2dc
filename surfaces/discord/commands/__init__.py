"""Discord's application (slash) commands; the ``!`` text aliases are routed by the core."""

from __future__ import annotations

from surfaces.discord.commands.slash import SLASH_COMMANDS, SlashCommands

__all__ = ["SLASH_COMMANDS", "SlashCommands"]
