"""Files attached in the composer (the paperclip, a drop, a pasted screenshot).

The page sends each file in the message's JSON: ``{"name", "type", "size", "data"}``, ``data`` its
bytes in base64. The page leaves ``data`` out for a file the relay would not send anyway (larger than
it takes, or never text), so the body stays small, and the core names that file as not sent, as it
does on every surface. An image up to ``MAX_IMAGE_BYTES`` goes to agents that take images.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from core.surface_api import Attachment, download_as

__all__ = ["BODY_LIMIT", "MAX_FILES", "MAX_IMAGE_BYTES", "BadAttachment", "attachments"]

MAX_FILES = 10
MAX_IMAGE_BYTES = 10 * 1024 * 1024
#: The largest message body: the text, and the files' base64 (4/3 of their bytes), with room to spare.
BODY_LIMIT = 512 * 1024 + (MAX_IMAGE_BYTES * 4 // 3) * 2


class BadAttachment(ValueError):
    """What the page sent is not a list of files as it sends them (the message says what, for a 400)."""


def _one(item: Any) -> Attachment:
    if not isinstance(item, dict):
        raise BadAttachment("each file must be an object")
    name, mime, data, size = item.get("name"), item.get("type") or "application/octet-stream", item.get("data"), \
        item.get("size")
    if not isinstance(name, str) or not name or len(name) > 255 or not isinstance(mime, str) or len(mime) > 255:
        raise BadAttachment("each file needs a name and a type")
    if data is None:  # the page left it out: the core names it as not sent
        return Attachment("file", mime, b"", name)
    if not isinstance(data, str):
        raise BadAttachment("a file's data must be base64 text")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise BadAttachment(f"the data of {name!r} is not base64") from None
    if isinstance(size, int) and size != len(raw):
        raise BadAttachment(f"the data of {name!r} is not the whole file")
    kind = download_as(mime, len(raw), image_limit=MAX_IMAGE_BYTES)
    return Attachment("file", mime, b"", name) if kind is None else Attachment(kind, mime, raw, name)


def attachments(files: Any) -> tuple[Attachment, ...]:
    """The files of a message body's ``files`` (absent: none); ``BadAttachment`` for anything else."""
    if files is None:
        return ()
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise BadAttachment(f"files must be a list of at most {MAX_FILES}")
    return tuple(_one(item) for item in files)
