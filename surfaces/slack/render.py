"""The Slack formatter: the core's blocks -> a ``markdown`` block, a plain ``text`` fallback, buttons.

The ``markdown`` block takes standard Markdown (12,000 characters per payload), so the agent's text
is sent as it is; Slack's own syntax (``<!channel>``, ``<@U…>``) is literal there and pings nobody.
In the core's Markdown a single newline is a line break (status lines, an approval prompt), while
standard Markdown joins such lines into one: outside code blocks (as the core reads fences:
``code_lines``) a line followed by another gets Markdown's hard break (two trailing spaces). A text
that grows only ever gains breaks at its end, so a native stream of it still only appends.
Error prose that suggests starting a new conversation (``ErrorProse.reset``) gains Slack's way of
doing that (``wording.RESET_HINT``). A fence the core closed only because the piece being written
ends inside a code block (``Text.closer``) is left out of what a native stream shows
(``SlackMessage.streamable``): a stream can only grow, and that block goes on.
The ``text`` fallback (notifications, clients without blocks) is the plain text with Slack's three
control characters escaped, so it cannot ping either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.surface_api import (
    Block,
    Button,
    ErrorProse,
    Text,
    code_lines,
    markdown_of,
    monospace_tables,
    plain_text,
)
from surfaces.slack import wording

__all__ = ["ACTION_PREFIX", "SlackFormatter", "SlackMessage", "escape", "payload", "render"]

#: ``action_id`` of every button the relay posts (``acp_relay:<n>``; the value is the core's token).
ACTION_PREFIX = "acp_relay:"
_LABEL_MAX = 75  # Slack's limit for a button's text


def escape(text: str) -> str:
    """Slack's escaping for ``text`` fields: ``&``, ``<`` and ``>`` are its control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render(markdown: str) -> str:
    """The ``markdown`` block's text: the core's Markdown with its line breaks kept."""
    if "\n" not in markdown:
        return markdown
    lines = code_lines(markdown)
    out = []
    for i, (line, code) in enumerate(lines):
        if not code and i + 1 < len(lines) and line.strip() and lines[i + 1][0].strip() and not line.endswith("  "):
            line += "  "
        out.append(line)
    return "\n".join(out)


def _button(i: int, button: Button) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "button", "action_id": f"{ACTION_PREFIX}{i}", "value": button.token,
                               "text": {"type": "plain_text", "text": button.label[:_LABEL_MAX] or "?"}}
    if button.style != "default":
        element["style"] = button.style
    return element


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """One Slack message: the ``markdown`` block's text (or, ``plain``, the text as it is), and what of
    it a native stream may show while the piece grows."""

    markdown: str
    plain: bool = False
    streamable: str = ""

    @property
    def length(self) -> int:
        """Characters of the ``markdown`` block (Slack's 12,000), or of the plain text."""
        return len(self.markdown)

    def payload(self, buttons: tuple[Button, ...] = ()) -> dict[str, Any]:
        """The ``text`` and ``blocks`` arguments of ``chat.postMessage`` / ``chat.update``.

        ``plain``: the platform refused the markup, so only escaped text is sent (buttons stay).
        """
        if self.plain:
            blocks: list[dict[str, Any]] = []
            text = escape(self.markdown)
        else:
            blocks = [{"type": "markdown", "text": self.markdown}]
            text = escape(plain_text(self.markdown)) or " "
        if buttons:
            blocks.append({"type": "actions", "elements": [_button(i, b) for i, b in enumerate(buttons)]})
        return {"text": text, "blocks": blocks}


def _block(block: Block) -> str:
    words = block.markdown()
    if isinstance(block, ErrorProse) and block.reset and words:
        return f"{words} {wording.RESET_HINT}"
    if isinstance(block, Text):  # a markdown block draws no tables: an aligned code block instead
        return monospace_tables(words)
    return words


class SlackFormatter:
    """Blocks as the ``markdown`` block's text (``render``), with Slack's reset hint after error prose
    that suggests one."""

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> SlackMessage:
        """One message."""
        if plain:
            return SlackMessage(markdown_of(blocks), plain=True)
        markdown = render("\n\n".join(m for m in (_block(b) for b in blocks) if m))
        closer = blocks[-1].closer if blocks and isinstance(blocks[-1], Text) else ""
        streamable = markdown[: -len(closer)] if closer and markdown.endswith(closer) else markdown
        return SlackMessage(markdown, streamable=streamable)


def payload(markdown: str, buttons: tuple[Button, ...] = (), *, plain: bool = False) -> dict[str, Any]:
    """The payload of one ``Text`` block of ``markdown`` (for the surface's own short answers)."""
    return SlackFormatter().render((Text(markdown),), plain=plain).payload(buttons)
