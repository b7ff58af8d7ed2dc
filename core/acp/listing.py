"""The agent's own list of sessions (``session/list``), as a chat shows it: id, title, age."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.acp._dispatch import dicts
from core.redact import redact

__all__ = ["SessionListing", "read_listing"]

#: A title longer than this is cut (it becomes a button's label).
TITLE_MAX = 80


@dataclass(frozen=True, slots=True)
class SessionListing:
    """One session the agent knows (``SessionInfo``): ``updated`` is a POSIX time, None when not given."""

    session_id: str
    cwd: str
    title: str = ""
    updated: float | None = None


def _when(value: Any) -> float | None:
    """An ISO 8601 ``updatedAt`` as a POSIX time (None for anything else)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def read_listing(result: Any) -> tuple[list[SessionListing], str | None]:
    """A ``session/list`` answer -> its sessions (newest first) and the cursor of the next page."""
    if not isinstance(result, dict):
        return [], None
    found = []
    for info in dicts(result.get("sessions")):
        sid = info.get("sessionId")
        if not isinstance(sid, str) or not sid:
            continue
        title = info.get("title")
        title = redact(" ".join(title.split()))[:TITLE_MAX] if isinstance(title, str) else ""
        found.append(SessionListing(sid, str(info.get("cwd") or ""), title, _when(info.get("updatedAt"))))
    found.sort(key=lambda s: s.updated or 0.0, reverse=True)
    cursor = result.get("nextCursor")
    return found, cursor if isinstance(cursor, str) and cursor else None
