"""What an agent hands the person besides words: files it points at or embeds, the edits it made,
and the questions it asks (``elicitation/create``). Parsed from the wire here, untrusted: a path is
only a claim (the engine checks it against the conversation's folder before anything is read)."""

from __future__ import annotations

import asyncio
import base64
import binascii
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

__all__ = [
    "ElicitationRequest",
    "FileDiff",
    "SharedFile",
    "shared_file",
    "tool_exchange",
]

#: Content block types that carry a file rather than words.
FILE_BLOCKS = frozenset({"resource_link", "resource", "image"})


@dataclass(frozen=True, slots=True)
class SharedFile:
    """A file the agent shared: a link to a path (``resource_link``: ``data`` is None, the relay reads
    ``path`` if it is inside the conversation's folder) or content it embedded (``resource``,
    ``image``: ``data`` holds it)."""

    name: str
    path: str = ""
    mime_type: str = ""
    data: bytes | None = None


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One edit a tool call reports (ACP ``diff`` content): ``old`` None for a new file."""

    path: str
    old: str | None
    new: str


def _path_of(uri: str) -> str:
    """The local path a ``file://`` URI (or a bare path) names; "" for any other scheme."""
    if uri.startswith("/"):
        return uri
    parsed = urlparse(uri)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return unquote(parsed.path)
    return ""


def _name(uri: str, name: Any = None) -> str:
    if isinstance(name, str) and name.strip():
        return name.strip().replace("/", "_")
    tail = urlparse(uri).path.rsplit("/", 1)[-1] if uri else ""
    return unquote(tail) or "file"


def _decoded(text: Any) -> bytes | None:
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def shared_file(block: Any) -> SharedFile | None:
    """A ``resource_link`` / ``resource`` / ``image`` content block as a SharedFile (None for words,
    and for a block that names nothing it could be)."""
    if not isinstance(block, dict) or block.get("type") not in FILE_BLOCKS:
        return None
    mime = str(block.get("mimeType") or "")
    if block["type"] == "resource_link":
        uri = str(block.get("uri") or "")
        path = _path_of(uri)
        return SharedFile(_name(uri, block.get("name")), path, mime) if path else None
    if block["type"] == "image":
        data = _decoded(block.get("data"))
        uri = str(block.get("uri") or "")
        suffix = mime.rsplit("/", 1)[-1] if "/" in mime else "bin"
        return SharedFile(_name(uri) if uri else f"image.{suffix}", "", mime, data) if data is not None else None
    inner = block.get("resource")
    if not isinstance(inner, dict):
        return None
    uri = str(inner.get("uri") or "")
    mime = str(inner.get("mimeType") or mime)
    if isinstance(inner.get("text"), str):
        return SharedFile(_name(uri), "", mime or "text/plain", str(inner["text"]).encode())
    data = _decoded(inner.get("blob"))
    return SharedFile(_name(uri), "", mime, data) if data is not None else None


def tool_exchange(content: Any) -> tuple[tuple[FileDiff, ...], tuple[SharedFile, ...]]:
    """The edits (``diff``) and files (``content`` wrapping a file block) of a tool call's content."""
    diffs: list[FileDiff] = []
    files: list[SharedFile] = []
    for item in content if isinstance(content, list) else ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "diff" and isinstance(item.get("path"), str) and isinstance(item.get("newText"), str):
            old = item.get("oldText")
            diffs.append(FileDiff(item["path"], old if isinstance(old, str) else None, item["newText"]))
        elif item.get("type") == "content" and (found := shared_file(item.get("content"))) is not None:
            files.append(found)
    return tuple(diffs), tuple(files)


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """An agent's ``elicitation/create``: a form (``schema``, a restricted JSON Schema) or a link to
    open (``url``). ``answered`` is set once our answer is written; ``completed`` when the agent says
    the link's interaction is done (the person need not press Done then)."""

    session_id: str
    mode: str
    message: str
    schema: dict[str, Any] = field(default_factory=dict)
    url: str = ""
    elicitation_id: str = ""
    answered: asyncio.Event = field(default_factory=asyncio.Event, compare=False, repr=False)
    #: Set when the agent says a link's interaction finished out of band (``elicitation/complete``).
    completed: asyncio.Event = field(default_factory=asyncio.Event, compare=False, repr=False)

    @classmethod
    def of(cls, params: dict[str, Any]) -> ElicitationRequest:
        """The request in ``params`` (fields of the wrong type read as empty)."""
        schema = params.get("requestedSchema")
        return cls(str(params.get("sessionId") or ""), str(params.get("mode") or ""),
                   str(params.get("message") or ""), schema if isinstance(schema, dict) else {},
                   str(params.get("url") or ""), str(params.get("elicitationId") or ""))
