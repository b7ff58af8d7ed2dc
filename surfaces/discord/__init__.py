"""The Discord surface (discord.py), exported as ``PLUGIN`` (entry point ``acp_relay.surfaces``).

A DM is one conversation; in an allowed channel a mention opens a thread that holds the
conversation. Slash commands (/new, /compact, /stop, /status, /model, /help) and their ``!`` text
aliases; answers streamed by send + edit; approvals as buttons. See ``plugin`` (what the relay
loads), ``settings`` (the config), ``launching`` (``launch``, ``doctor``), ``inbound`` for what is a
conversation, ``commands.slash`` for the commands, ``catchup`` for what was written while the relay
was away, ``gateway`` for the connection and ``surface`` for delivery.
"""

from __future__ import annotations

from surfaces.discord.plugin import PLUGIN

__all__ = ["PLUGIN"]
