"""What was written while the relay was away: fetched from the channel history and handed over.

The gateway only replays events to a connection that resumes its session; a relay that starts anew
(or whose session Discord invalidated) identifies afresh and would never see what people wrote in
the meantime. So after every READY, each conversation channel the relay knows (``KnownChannels``,
the recent ones) is read after the last message it handled, and those messages go to the core
as if they had just arrived: the core de-duplicates by message id, so nothing is answered twice.

"The last message it handled" is the position as it stood when the session began (``mark``, at
discord.py's ``on_connect``): live messages of the new session (they arrive while discord.py still
waits for its servers) wait for the catch-up (``Router.hold``), and a position they moved could
otherwise hide what was written before them.

Answering a long backlog would bury the conversation, so at most ``per_channel`` of the newest
missed messages in a channel are handed over (``launch`` gives the host's ``queue_limit``: as many
as a conversation queues while it is busy, so a backlog is answered like a burst of live messages);
when there were more, one sentence says how many were sent and that only the latest are answered
(a notice, at the channel's pace, before them).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

import discord

from core.surface_api import Host
from surfaces.discord import wording
from surfaces.discord.channels import KnownChannels, Seen
from surfaces.discord.errors import PLATFORM_ERRORS, REFUSED_CODES
from surfaces.discord.inbound import Router
from surfaces.discord.keys import conversation_key

if TYPE_CHECKING:
    from discord.abc import MessageableChannel

__all__ = ["CatchUp"]

log = logging.getLogger("acp_relay.discord.catchup")

#: Only channels with a conversation in the last week are read (Discord keeps threads a week too).
WITHIN_S = 7 * 24 * 3600.0
MAX_CHANNELS = 50
FETCH_LIMIT = 100  # one page of history per channel


class CatchUp:
    """Reads the known channels after the last message handled in each."""

    def __init__(self, client: discord.Client, router: Router, known: KnownChannels, host: Host, *,
                 per_channel: int = 10) -> None:
        self.client = client
        self.host = host
        self.router = router
        self.known = known
        self.per_channel = per_channel
        self.handed = 0  # messages handed over since start (for the log and the tests)
        self._from = known.recent(WITHIN_S, MAX_CHANNELS)

    def mark(self) -> None:
        """A new session begins: the next ``run`` reads from the positions as they are now."""
        self._from = self.known.recent(WITHIN_S, MAX_CHANNELS)

    async def run(self) -> None:
        """One pass over the recent channels; a channel that fails is logged and skipped."""
        for channel_id, seen in self._from:
            if not self.router.receiving:
                return
            try:
                await self._channel(channel_id, seen)
            except PLATFORM_ERRORS as exc:
                gone = isinstance(exc, discord.HTTPException) and exc.code in REFUSED_CODES
                log.warning("could not read what was missed in Discord channel %s%s: %s", channel_id,
                            " (it is gone or closed to the bot)" if gone else "", exc)

    async def _channel(self, channel_id: int, seen: Seen) -> None:
        channel = self.client.get_channel(channel_id) or self.client.get_partial_messageable(channel_id)
        if not isinstance(channel, discord.abc.Messageable):  # e.g. a forum: its posts are the threads
            return
        missed = [m for m in await self._history(channel, seen.last) if self.router.is_person(m)]
        if seen.kind == "channel":  # in an allowed channel only a mention is for the bot
            missed = [m for m in missed if self.router.mentions_me(m)]
        if not missed:
            return
        skipped, answered = missed[:-self.per_channel], missed[-self.per_channel:]
        log.info("Discord channel %s: %d messages were sent while the relay was away", channel_id, len(missed))
        if skipped:
            for message in skipped:  # counted once: the next start does not find them again
                self.known.note(channel_id, message.id, seen.kind, seen.parent)
            if seen.kind != "channel":
                self.host.notify(conversation_key(channel_id), wording.missed_text(len(missed), len(answered)))
        for message in answered:
            await self.router.on_message(message, live=False)
            self.handed += 1

    async def _history(self, channel: discord.abc.Messageable, after: int) -> list[discord.Message]:
        """The channel's messages after ``after``, oldest first. The page is asked for raw and each
        message read on its own: one discord.py cannot parse is skipped (``Router.unreadable``)
        instead of ending the catch-up of every channel after it, at every start."""
        channel_id = getattr(channel, "id", 0)
        page = await self.client.http.logs_from(channel_id, FETCH_LIMIT, after=after)
        found: list[discord.Message] = []
        for data in sorted(page, key=lambda d: int(d.get("id") or 0)):
            try:
                # A channel get_channel or get_partial_messageable gave: one of the kinds Message takes.
                found.append(discord.Message(state=self.client._connection, channel=cast("MessageableChannel", channel),
                                             data=data))
            except Exception as exc:  # whatever discord.py raises for a message it does not expect
                self.router.unreadable("MESSAGE_CREATE", str(data.get("id") or ""), type(exc).__name__)
        return found
