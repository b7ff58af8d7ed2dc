"""The Slack surface (slack-bolt), exported as ``PLUGIN`` (entry point ``acp_relay.surfaces``).

Each thread is one conversation: a mention of the app in a channel starts a thread under that
message, and every reply in a thread the app is part of continues it; a direct message works the
same way. Events arrive in Socket Mode (the default) over a websocket the app opens itself
(``socket``), or in HTTP mode on 127.0.0.1:``http_port`` at ``/slack/events`` (``http``).

Modules: ``plugin`` (what the relay loads), ``settings`` and ``options`` (the config, tokens and
timings; ``check``), ``launching`` (``launch``, ``doctor``), ``surface`` (the Surface the core calls),
``listeners`` and ``inbound`` (what Slack sends, translated), ``render`` (Markdown block, text
fallback, buttons), ``streaming`` (native streams), ``indicator`` (assistant status or reaction),
``threads`` (which threads are the app's), ``errors`` (Slack's failures as the core's), ``wording``
(Slack's own sentences).
"""

from __future__ import annotations

from surfaces.slack.plugin import PLUGIN

__all__ = ["PLUGIN"]
