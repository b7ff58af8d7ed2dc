"""Buttons: the core's one-time tokens as Discord components, and presses back to the core.

A view is built for sending only and stopped at once, so discord.py never keeps it: every press
reaches ``Presses.on_press`` through ``on_interaction`` and is resolved by its token in the core.
A press on a button whose token is used, replaced or from before a restart (the view is long gone)
is answered "expired" only to the person who pressed, and changes nothing.
"""

from __future__ import annotations

import logging
from typing import Any

import discord

from core.surface_api import Button, ButtonPress, Host
from surfaces.discord import wording
from surfaces.discord.errors import PLATFORM_ERRORS
from surfaces.discord.interactions import NO_PINGS
from surfaces.discord.keys import SURFACE_NAME, conversation_key

__all__ = ["CUSTOM_ID_PREFIX", "Presses", "build_view", "token_of"]

log = logging.getLogger("acp_relay.discord.views")

CUSTOM_ID_PREFIX = "acp:"
_MAX_BUTTONS = 25  # five rows of five
_MAX_LABEL = 80
_STYLES = {"primary": discord.ButtonStyle.primary, "danger": discord.ButtonStyle.danger,
           "default": discord.ButtonStyle.secondary}


def build_view(buttons: tuple[Button, ...]) -> discord.ui.View:
    """The components for ``buttons``; the custom id of each is its one-time token."""
    view = discord.ui.View(timeout=None)
    for button in buttons[:_MAX_BUTTONS]:
        label = button.label if len(button.label) <= _MAX_LABEL else button.label[:_MAX_LABEL - 1] + "…"
        view.add_item(discord.ui.Button(label=label or "…", style=_STYLES.get(button.style, _STYLES["default"]),
                                        custom_id=CUSTOM_ID_PREFIX + button.token))
    view.stop()  # sent, never dispatched by discord.py: the core resolves presses by token
    return view


def token_of(interaction: discord.Interaction) -> str | None:
    """The core's token in a press on one of our buttons, or None for anything else."""
    if interaction.type is not discord.InteractionType.component:
        return None
    data: dict[str, Any] = dict(interaction.data or {})
    custom_id = str(data.get("custom_id", ""))
    return custom_id.removeprefix(CUSTOM_ID_PREFIX) if custom_id.startswith(CUSTOM_ID_PREFIX) else None


class Presses:
    """Hands presses to the core and answers each one ephemerally, to the person who pressed."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.receiving = True

    async def on_press(self, interaction: discord.Interaction, token: str) -> None:
        """Defer at once (a model switch may take a while), resolve, answer to the presser only."""
        try:
            if not self.receiving:
                await interaction.response.send_message(wording.RESTARTING, ephemeral=True)
                return
            await interaction.response.defer(ephemeral=True, thinking=True)
            message_id = str(interaction.message.id) if interaction.message is not None else ""
            press = ButtonPress(SURFACE_NAME, conversation_key(interaction.channel_id or 0),
                                str(interaction.user.id), token, message_id)
            result = await self.host.press(press)
            log.info("button press in %s: %s", press.conversation_key, result.outcome)
            await interaction.edit_original_response(content=result.text, allowed_mentions=NO_PINGS)
        except PLATFORM_ERRORS as exc:
            log.warning("could not answer a button press in channel %s: %s", interaction.channel_id, exc)
