"""Files a person sends with a message, as the agent reads them.

Every agent reads text, so a text file goes into the prompt as text: a line naming the file, then
its content in a code fence longer than any run of backticks inside it (UTF-8, or UTF-16 with its
byte order mark). What is not text (a PDF, an archive, a file in another encoding), and a file
larger than ``MAX_FILE_BYTES`` (a surface does not download one: its ``Attachment`` comes without
data), is not sent; the turn names each of them in one notice, so the person knows the agent never
saw it. Images are the turn's own (``prompt_content``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from core.engine import wording
from core.engine.messages import Attachment

__all__ = ["MAX_FILE_BYTES", "download_as", "file_blocks", "may_be_text", "not_sent"]

#: The largest file a surface downloads for the agent (a log, a source file, a config).
MAX_FILE_BYTES = 512 * 1024

_BACKTICKS = re.compile(r"`{3,}")
#: Media types whose files are never text: a surface does not download them for the agent.
_NEVER_TEXT = ("audio/", "video/", "image/", "font/", "application/pdf", "application/zip", "application/gzip",
               "application/x-tar", "application/vnd.")


def may_be_text(mime: str) -> bool:
    """Whether a file of media type ``mime`` may be text (worth downloading for the agent)."""
    return not mime.lower().startswith(_NEVER_TEXT)


def download_as(mime: str, size: int, *, image_limit: int) -> Literal["image", "file"] | None:
    """How a surface takes a file a person attached, before downloading it: as an image (up to
    ``image_limit`` bytes, the platform's), as a file that may be text (up to ``MAX_FILE_BYTES``), or
    None: not at all (it goes without its data, and the turn names it as not sent)."""
    if mime.startswith("image/") and size <= image_limit:
        return "image"
    if may_be_text(mime) and size <= MAX_FILE_BYTES:
        return "file"
    return None


def _files(attachments: Sequence[Attachment]) -> list[Attachment]:
    return [a for a in attachments if a.kind == "file"]


def _text(attachment: Attachment) -> str | None:
    """The file's content as text; None when it is not text (or was not downloaded)."""
    if not attachment.data or len(attachment.data) > MAX_FILE_BYTES:
        return None
    data = attachment.data
    codec = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"  # PowerShell's ">" writes UTF-16
    try:
        text = data.decode(codec)
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def _fenced(text: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=2)
    fence = "`" * (longest + 1)
    body = text.rstrip("\r\n")
    return f"{fence}\n{body}\n{fence}"


def file_blocks(attachments: Sequence[Attachment]) -> list[dict[str, Any]]:
    """An ACP text block for each text file among ``attachments``, in order."""
    blocks = []
    for attachment in _files(attachments):
        text = _text(attachment)
        if text is not None:
            header = wording.attached_file_text(attachment.name or "untitled")
            blocks.append({"type": "text", "text": f"{header}\n{_fenced(text)}"})
    return blocks


def not_sent(attachments: Sequence[Attachment]) -> list[str]:
    """The names of the files among ``attachments`` the agent is not sent (not text, or too large)."""
    return [a.name or "untitled" for a in _files(attachments) if _text(a) is None]
