"""Neutral Markdown -> what Slack shows: a ``markdown`` block, a plain ``text`` fallback, buttons.

The ``markdown`` block takes standard Markdown (12,000 characters per payload), so the agent's text
is sent as it is; Slack's own syntax (``<!channel>``, ``<@U…>``) is literal there and pings nobody.
In the core's Markdown a single newline is a line break (status lines, an approval prompt), while
standard Markdown joins such lines into one: outside code blocks a line followed by another gets
Markdown's hard break (two trailing spaces). A text that grows only ever gains breaks at its end, so
a native stream of it still only appends.
The ``text`` fallback (notifications, clients without blocks) is the plain text with Slack's three
control characters escaped, so it cannot ping either. Where the core's prose suggests starting a
new conversation, Slack's way of doing that is added (``wording.RESET_HINT``).
"""

from __future__ import annotations

import re
from typing import Any

from core.surface_api import Button, close_open_fence, plain_text
from surfaces.slack import wording

__all__ = ["ACTION_PREFIX", "escape", "payload", "render", "streamable"]

#: ``action_id`` of every button the relay posts (``acp_relay:<n>``; the value is the core's token).
ACTION_PREFIX = "acp_relay:"
_LABEL_MAX = 75  # Slack's limit for a button's text
_FENCE_LINE = re.compile(r"(?m)^ {0,3}(?:`{3,}|~{3,}).*$")
_RESET = re.compile(r"\b[Ss]tart a new conversation\b[^.\n]*\.")


def escape(text: str) -> str:
    """Slack's escaping for ``text`` fields: ``&``, ``<`` and ``>`` are its control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _outside_fences(markdown: str) -> list[tuple[str, bool]]:
    """The text cut into (segment, is_code) at fence lines."""
    out: list[tuple[str, bool]] = []
    pos, code = 0, False
    for m in _FENCE_LINE.finditer(markdown):
        out.append((markdown[pos:m.end()], code))
        pos, code = m.end(), not code
    out.append((markdown[pos:], code))
    return out


def _hard_breaks(markdown: str) -> str:
    lines = markdown.split("\n")
    code = False
    for i, line in enumerate(lines[:-1]):
        if _FENCE_LINE.fullmatch(line):
            code = not code
        elif not code and line.strip() and lines[i + 1].strip() and not line.endswith("  "):
            lines[i] = line + "  "
    return "\n".join(lines)


def render(markdown: str) -> str:
    """The ``markdown`` block's text: the core's Markdown with its line breaks kept, and Slack's reset
    hint where the core suggests starting a new conversation."""
    if "new conversation" in markdown:
        markdown = "".join(seg if code else _RESET.sub(lambda m: f"{m.group(0)} {wording.RESET_HINT}", seg)
                           for seg, code in _outside_fences(markdown))
    return _hard_breaks(markdown) if "\n" in markdown else markdown


def _button(i: int, button: Button) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "button", "action_id": f"{ACTION_PREFIX}{i}", "value": button.token,
                               "text": {"type": "plain_text", "text": button.label[:_LABEL_MAX] or "?"}}
    if button.style != "default":
        element["style"] = button.style
    return element


def payload(markdown: str, buttons: tuple[Button, ...] = (), *, plain: bool = False) -> dict[str, Any]:
    """The ``text`` and ``blocks`` arguments of ``chat.postMessage`` / ``chat.update``.

    ``plain``: the platform refused the markup, so only escaped text is sent (buttons stay).
    """
    if plain:
        blocks: list[dict[str, Any]] = []
        text = escape(markdown)
    else:
        rendered = render(markdown)
        blocks = [{"type": "markdown", "text": rendered}]
        text = escape(plain_text(rendered)) or " "
    if buttons:
        blocks.append({"type": "actions", "elements": [_button(i, b) for i, b in enumerate(buttons)]})
    return {"text": text, "blocks": blocks}


def streamable(markdown: str) -> str:
    """What of a growing text may be streamed: a fence the splitter closed only because the text
    ends inside a code block is left off (a stream can only grow, and that block goes on)."""
    stripped = markdown.rstrip()
    last_newline = stripped.rfind("\n")
    if last_newline < 0 or not _FENCE_LINE.fullmatch(stripped[last_newline + 1:]):
        return markdown
    before = stripped[:last_newline]
    return before if close_open_fence(before) != before else markdown
