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
The first Markdown table of a message that Slack can draw is its ``table`` block, between the
``markdown`` blocks of the text before and after it (``table_block``); any other table, a table in
what a native stream shows (``markdown_text`` only) and a table in plain text are aligned code blocks.
The ``text`` fallback (notifications, clients without blocks) is the plain text with Slack's three
control characters escaped, so it cannot ping either; a table there is its aligned lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.surface_api import (
    Block,
    Button,
    ErrorProse,
    MarkdownTable,
    Text,
    code_lines,
    markdown_of,
    monospace_tables,
    plain_text,
)
from surfaces.slack import wording
from surfaces.slack.table_block import split_at_table, table_block

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
    """One Slack message: the ``markdown`` block's text with any table as an aligned code block (or,
    ``plain``, the text as it is), and what of it a native stream may show while the piece grows;
    ``table``: the table sent as a ``table`` block instead, between ``before`` and ``after``."""

    markdown: str
    plain: bool = False
    streamable: str = ""
    before: str = ""
    table: MarkdownTable | None = None
    after: str = ""

    @property
    def length(self) -> int:
        """Characters of the ``markdown`` block (Slack's 12,000), or of the plain text.

        With a ``table`` block the payload's markdown blocks hold less (``before`` and ``after``), but
        the same piece may go out as a native stream, where the table is the code block: the longer
        count is the one that must fit.
        """
        return len(self.markdown)

    def payload(self, buttons: tuple[Button, ...] = ()) -> dict[str, Any]:
        """The ``text`` and ``blocks`` arguments of ``chat.postMessage`` / ``chat.update``.

        ``plain``: the platform refused the markup, so only escaped text is sent (buttons stay).
        """
        if self.plain:
            blocks: list[dict[str, Any]] = []
            text = escape(self.markdown)
        else:
            if self.table is None:
                blocks = [{"type": "markdown", "text": self.markdown}]
            else:
                blocks = [*_markdown(self.before), table_block(self.table), *_markdown(self.after)]
            text = escape(plain_text(self.markdown)) or " "
        if buttons:
            blocks.append({"type": "actions", "elements": [_button(i, b) for i, b in enumerate(buttons)]})
        return {"text": text, "blocks": blocks}


def _markdown(text: str) -> list[dict[str, Any]]:
    return [{"type": "markdown", "text": text}] if text.strip() else []


def _block(block: Block) -> str:
    words = block.markdown()
    if isinstance(block, ErrorProse) and block.reset and words:
        return f"{words} {wording.RESET_HINT}"
    if isinstance(block, Text):  # a markdown block draws no tables: an aligned code block instead
        return monospace_tables(words)
    return words


def _joined(words: Sequence[str]) -> str:
    return render("\n\n".join(m for m in words if m))


def _around_table(blocks: Sequence[Block], words: list[str]) -> tuple[str, MarkdownTable, str] | None:
    """The first table a ``table`` block can carry, with the message's text before and after it."""
    for i, block in enumerate(blocks):
        if isinstance(block, Text) and (cut := split_at_table(block.markdown())):
            before, table, after = cut
            return _joined([*words[:i], before]), table, _joined([after, *words[i + 1:]])
    return None


class SlackFormatter:
    """Blocks as the ``markdown`` block's text (``render``), with Slack's reset hint after error prose
    that suggests one, and a table as Slack's ``table`` block where one can go."""

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> SlackMessage:
        """One message."""
        if plain:
            return SlackMessage(markdown_of([Text(monospace_tables(b.markdown())) if isinstance(b, Text) else b
                                             for b in blocks]), plain=True)
        words = [_block(b) for b in blocks]
        markdown = _joined(words)
        closer = blocks[-1].closer if blocks and isinstance(blocks[-1], Text) else ""
        streamable = markdown[: -len(closer)] if closer and markdown.endswith(closer) else markdown
        if (around := _around_table(blocks, words)) is None:
            return SlackMessage(markdown, streamable=streamable)
        before, table, after = around
        return SlackMessage(markdown, streamable=streamable, before=before, table=table, after=after)


def payload(markdown: str, buttons: tuple[Button, ...] = (), *, plain: bool = False) -> dict[str, Any]:
    """The payload of one ``Text`` block of ``markdown`` (for the surface's own short answers)."""
    return SlackFormatter().render((Text(markdown),), plain=plain).payload(buttons)
