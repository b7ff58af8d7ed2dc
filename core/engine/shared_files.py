"""The files an agent shares, checked before anything is read or sent, and the edits it reports.

A ``resource_link`` is only a claim by the agent (untrusted): the relay reads a path only inside the
conversation's project folder, resolved (``..`` and symlinks followed first, so a link cannot lead out
of it), only a regular file, only within the platform's size limit. Embedded content (``resource``,
``image``) is the agent's own bytes: only the size is checked. An image is sent as one only when its
bytes say so (magic numbers), whatever type the agent claims.

Edits (ACP ``diff`` content) are counted per file (``+added -removed``) for the tool line, and the
turn's whole diff is one unified diff (``turn_diff``).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from core.acp.exchange import FileDiff, SharedFile
from core.engine import twoway_wording as say

__all__ = ["DEFAULT_MAX_FILE_BYTES", "Outgoing", "Refused", "check", "diff_counts", "edits_suffix",
           "image_kind", "turn_diff"]

#: A surface that names no limit is sent at most this much (the relay holds a file in memory once).
DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024

_MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"GIF87a", "gif"), (b"GIF89a", "gif"))


def image_kind(data: bytes) -> str:
    """``png``, ``jpeg``, ``gif`` or ``webp`` when the bytes are such an image, else ""."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    return "webp" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else ""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A file to send: its name, bytes, and whether the bytes are an image."""

    name: str
    data: bytes
    image: bool = False


@dataclass(frozen=True, slots=True)
class Refused:
    """A file not sent, with the sentence that says why."""

    name: str
    sentence: str


def _inside(path: str, folder: str) -> Path | None:
    """``path`` resolved (relative to ``folder``), if it is inside ``folder`` resolved; else None."""
    root = Path(folder).resolve()
    target = Path(os.path.join(root, path)).resolve()  # an absolute path stays itself
    return target if target == root or target.is_relative_to(root) else None


def check(shared: SharedFile, folder: str, limit: int | None) -> Outgoing | Refused:
    """What of ``shared`` may be sent into a chat that takes files of at most ``limit`` bytes."""
    cap = limit or DEFAULT_MAX_FILE_BYTES
    data = shared.data
    name = shared.name
    if data is None:
        target = _inside(shared.path, folder) if folder else None
        if target is None:
            return Refused(name, say.file_not_sent(name, "outside"))
        if not target.exists():
            return Refused(name, say.file_not_sent(name, "missing"))
        if not target.is_file():
            return Refused(name, say.file_not_sent(name, "not_file"))
        size = target.stat().st_size
        if size > cap:
            return Refused(name, say.file_not_sent(name, say.too_big(size, cap)))
        try:
            data = target.read_bytes()
        except OSError:
            return Refused(name, say.file_not_sent(name, "unreadable"))
    if len(data) > cap:
        return Refused(name, say.file_not_sent(name, say.too_big(len(data), cap)))
    return Outgoing(name, data, bool(image_kind(data)))


def diff_counts(diff: FileDiff) -> tuple[int, int]:
    """Lines added and removed by one edit."""
    added = removed = 0
    old = (diff.old or "").splitlines()
    for line in difflib.unified_diff(old, diff.new.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def edits_suffix(title: str, diffs: tuple[FileDiff, ...]) -> str:
    """What a tool line adds for the edits of its call: each file's path (unless the title shows
    it) and ``+added -removed``."""
    parts = []
    for d in diffs:
        added, removed = diff_counts(d)
        shown = "" if d.path in title else f"{d.path} "
        parts.append(f"{shown}+{added} -{removed}")
    return f" ({', '.join(parts)})" if parts else ""


def turn_diff(diffs: list[FileDiff], folder: str) -> str:
    """One unified diff of the turn's edits, paths shown relative to the project folder."""
    out: list[str] = []
    for d in diffs:
        path = os.path.relpath(d.path, folder) if folder and os.path.isabs(d.path) else d.path
        before = "/dev/null" if d.old is None else f"a/{path}"
        out += difflib.unified_diff((d.old or "").splitlines(keepends=True), d.new.splitlines(keepends=True),
                                    before, f"b/{path}")
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"
    return "".join(out)
