"""Interactions the relay still owes an answer, and the messages it answered them with.

A slash command is deferred at once (Discord allows 3 seconds) and answered later through its
interaction, which travels with the command's ``InboundMessage`` as its ``origin``: the first
answer replaces the "is thinking…" response, later ones are followups. The interaction's token
lives 15 minutes, so messages made through it are edited through it only while it is fresh; after
that (or after a restart, when the interaction is gone) they are ordinary channel messages to the
surface.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import discord

__all__ = ["NO_PINGS", "TOKEN_LIFETIME_S", "Interactions", "LiveInteraction"]

#: Interaction tokens expire after 15 minutes; a margin keeps a slow call from crossing it.
TOKEN_LIFETIME_S = 14 * 60.0
#: Agent text never pings anyone: not @everyone, a role, a user, nor the person it replies to.
NO_PINGS = discord.AllowedMentions.none()
_KEEP = 1000  # interactions remembered (ids only matter for a quarter of an hour)


@dataclass(eq=False)
class LiveInteraction:
    """One deferred interaction: ``ephemeral`` is how it was deferred (only the asker sees it)."""

    interaction: discord.Interaction
    ephemeral: bool
    at: float
    answered: bool = False
    original_id: str | None = None

    async def answer(self, content: str, view: discord.ui.View | None, private: bool) -> str:
        """Answer through the interaction; returns the id of the message showing ``content``.

        The first answer replaces the "is thinking…" response (so it is as private as the deferral
        was: Discord would turn a first followup into that response anyway); later ones are
        followups, ephemeral where ``private``.
        """
        if not self.answered:
            msg = await self.interaction.edit_original_response(content=content, view=view,
                                                                allowed_mentions=NO_PINGS)
            self.answered = True
            self.original_id = str(msg.id)
            return self.original_id
        followup = self.interaction.followup
        if view is None:
            sent = await followup.send(content, ephemeral=private, wait=True, allowed_mentions=NO_PINGS)
        else:
            sent = await followup.send(content, ephemeral=private, wait=True, allowed_mentions=NO_PINGS, view=view)
        return str(sent.id)

    async def edit(self, message_id: str, content: str, view: discord.ui.View | None) -> None:
        """Edit a message this interaction made (the original response or a followup)."""
        if message_id == self.original_id:
            await self.interaction.edit_original_response(content=content, view=view, allowed_mentions=NO_PINGS)
        else:
            await self.interaction.followup.edit_message(int(message_id), content=content, view=view,
                                                         allowed_mentions=NO_PINGS)

    async def close(self, text: str | None) -> None:
        """Never leave "is thinking…" behind: say ``text``, or remove the response when there is none."""
        if self.answered:
            return
        self.answered = True
        if text:
            await self.interaction.edit_original_response(content=text, allowed_mentions=NO_PINGS)
        else:
            await self.interaction.delete_original_response()


class Interactions:
    """Opens deferred interactions, and knows the messages made through them."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._by_message: OrderedDict[str, LiveInteraction] = OrderedDict()

    def open(self, interaction: discord.Interaction, *, ephemeral: bool) -> LiveInteraction:
        """A deferred interaction, to hand to the engine as its message's ``origin``."""
        return LiveInteraction(interaction, ephemeral, self._clock())

    def fresh(self, live: LiveInteraction) -> bool:
        """``live``'s token may still be used."""
        return self._fresh(live) is not None

    def made(self, message_id: str, live: LiveInteraction) -> None:
        """``message_id`` was sent through ``live`` (so edits go through it while it is fresh)."""
        self._by_message[message_id] = live
        self._trim(self._by_message)

    def maker(self, message_id: str) -> LiveInteraction | None:
        """The fresh interaction that made ``message_id``, if any."""
        return self._fresh(self._by_message.get(message_id))

    def _fresh(self, live: LiveInteraction | None) -> LiveInteraction | None:
        if live is None or self._clock() - live.at > TOKEN_LIFETIME_S:
            return None
        return live

    @staticmethod
    def _trim(table: OrderedDict[str, LiveInteraction]) -> None:
        while len(table) > _KEEP:
            table.popitem(last=False)
