"""``conversations.replies`` of the fake Slack: a thread read back a page at a time, as Slack does it.

Modelled on Slack's documented method: ``channel`` and ``ts`` (the thread's parent, or any message of
it) are required; ``oldest`` / ``latest`` bound the messages by ts, exclusive unless ``inclusive``;
``limit`` (at most 1,000, default 1,000) a page; a further page is asked for with ``cursor`` (the
``response_metadata.next_cursor`` of the last one, while ``has_more``). The parent message comes
first on the first page whatever the bounds, as Slack returns it. Ephemeral and deleted messages are
not in the thread. Errors: ``thread_not_found`` (no such message), ``invalid_cursor``,
``invalid_ts_oldest`` / ``invalid_ts_latest``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any, Protocol

__all__ = ["Shown", "replies_page"]

_MAX_LIMIT = 1000


class Shown(Protocol):
    """What the fake keeps of a message (``slack_api.SlackMessage``)."""

    channel: str
    ts: str
    user: str
    text: str
    thread_ts: str | None
    blocks: list[dict[str, Any]]
    deleted: bool
    ephemeral_to: str | None
    files: list[str]


def _bound(params: dict[str, Any], key: str, default: float) -> float:
    raw = params.get(key)
    if raw in (None, ""):
        return default
    try:
        return float(str(raw))
    except ValueError:
        raise ValueError(f"invalid_ts_{key}") from None


def _wire(msg: Shown, bot_user: str, bot_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "message", "user": msg.user, "text": msg.text, "ts": msg.ts}
    if msg.thread_ts:
        out["thread_ts"] = msg.thread_ts
    if msg.blocks:
        out["blocks"] = msg.blocks
    if msg.user == bot_user:
        out["bot_id"] = bot_id
    if msg.files:
        out["files"] = [{"id": f} for f in msg.files]
    return out


def replies_page(messages: Iterable[Shown], params: dict[str, Any], *, bot_user: str, bot_id: str) -> dict[str, Any]:
    """The answer to ``conversations.replies`` with ``params`` (``ValueError(code)`` for Slack's errors)."""
    channel, ts = str(params.get("channel") or ""), str(params.get("ts") or "")
    shown = [m for m in messages if m.channel == channel and not m.deleted and m.ephemeral_to is None]
    asked = next((m for m in shown if m.ts == ts), None)
    if asked is None:
        raise ValueError("thread_not_found")
    parent_ts = asked.thread_ts or asked.ts
    oldest, latest = _bound(params, "oldest", 0.0), _bound(params, "latest", float("inf"))
    inclusive = str(params.get("inclusive", "")).lower() in ("1", "true")

    def within(m: Shown) -> bool:
        t = float(m.ts)
        return (oldest <= t <= latest) if inclusive else (oldest < t < latest)

    parent = [m for m in shown if m.ts == parent_ts]
    replies = [m for m in shown if m.thread_ts == parent_ts and m.ts != parent_ts and within(m)]
    thread = parent + sorted(replies, key=lambda m: float(m.ts))
    cursor = str(params.get("cursor") or "")
    try:
        start = int(base64.b64decode(cursor).decode().removeprefix("next:")) if cursor else 0
    except ValueError:
        raise ValueError("invalid_cursor") from None
    limit = min(int(params.get("limit") or _MAX_LIMIT), _MAX_LIMIT)
    page = thread[start:start + limit]
    more = start + limit < len(thread)
    answer: dict[str, Any] = {"messages": [_wire(m, bot_user, bot_id) for m in page], "has_more": more}
    next_cursor = base64.b64encode(f"next:{start + limit}".encode()).decode() if more else ""
    answer["response_metadata"] = {"next_cursor": next_cursor}
    return answer
