"""The local web dashboard, the embedded default surface, exported as ``PLUGIN`` (entry point
``acp_relay.surfaces``); ``launching.launch`` starts it for ``acp-relay run``.

Each browser tab is one conversation. The page is plain HTML, CSS and JavaScript from ``static/``
(Markdown rendered by the vendored ``marked``, sanitised by ``DOMPurify``); see ``server`` for the
security rules and ``auth`` for the login (a token always, one-time links, server-side sessions).

Agent text never becomes a control: the sanitiser drops form elements (buttons, inputs, ...) and
class, id, style and data-* attributes, and only the buttons the page builds from a message's
``buttons`` are approval buttons. The core's footer and refusal card are styled by position only:
the footer is the last top-level block of a message, the card the block just before it (the order
of ``core.engine.document``); the same words anywhere else are plain agent text.

The page draws its own icons (inline SVG) where the core's tool lines and footer have emoji, which
a browser without an emoji font shows as empty boxes; the server puts the core's glyph table
(``core.engine.wording.TOOL_GLYPHS``, ``FOOTER_GLYPH``) into the page, so the two never drift.
"""

from __future__ import annotations

from surfaces.dashboard.plugin import PLUGIN

__all__ = ["PLUGIN"]
