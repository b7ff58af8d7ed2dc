"""The local web dashboard, the embedded default surface, exported as ``PLUGIN`` (entry point
``acp_relay.surfaces``); ``launching.launch`` starts it for ``acp-relay run``.

Each browser tab is one conversation. The page is plain HTML, CSS and JavaScript from ``static/``
(Markdown rendered by the vendored ``marked``, sanitised by ``DOMPurify``); see ``server`` for the
security rules and ``auth`` for the login (a token always, one-time links, server-side sessions).

Agent text never becomes a control: the sanitiser drops form elements (buttons, inputs, ...) and
class, id, style and data-* attributes, and only the buttons the page builds from a message's
``buttons`` are approval buttons. Each message reaches the page as typed blocks (``render``): the
core's tool lines, plan, refusal card and footer are drawn from their fields, so the same words
written by the agent are plain agent text.

The page draws its own icons (inline SVG) where the core's tool lines and footer have emoji, which
a browser without an emoji font shows as empty boxes: a block says its status, not its glyph.
"""

from __future__ import annotations

from surfaces.dashboard.plugin import PLUGIN

__all__ = ["PLUGIN"]
