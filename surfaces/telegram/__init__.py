"""The Telegram surface (python-telegram-bot), exported as ``PLUGIN`` (entry point ``acp_relay.surfaces``).

A private chat is one conversation, and so is each topic of a forum group; in groups the bot
answers when mentioned or replied to. Replies stream as drafts in private chats and as a message
edited in place elsewhere. Updates arrive by long polling (the default) or a webhook; either way
none is confirmed to Telegram before the core has journaled it. See the modules: ``plugin`` (what
the relay loads), ``settings`` (the config), ``launching`` (``launch``, ``doctor``), ``surface`` (the
core's calls), ``intake`` and ``inbound`` (updates in), ``render`` (Markdown out), ``polling``, ``webhook``.
"""

from __future__ import annotations

from surfaces.telegram.plugin import PLUGIN

__all__ = ["PLUGIN"]
