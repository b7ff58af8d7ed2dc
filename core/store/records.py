"""What the store holds, as the rest of the relay sees it, and its one error."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from core.errors import RelayError

__all__ = [
    "HELD_RETRY_S",
    "ConversationRecord",
    "InboundRecord",
    "OutboundRecord",
    "ReplyMessageRecord",
    "StoreError",
    "disk_full",
    "held_prose",
]

#: What a person reads when the store's disk is full: nothing of theirs was kept.
STORE_FULL = ("The relay could not save this: the disk that holds its store is full. Free some space there, "
              "then send your message again.")
#: ... and when the database did not answer (a lost connection, a server restarting).
STORE_AWAY = "The relay's database did not answer just now, so this was not saved; send it again in a moment."
#: The same two, where the relay holds the message and tries again (a platform that sends it only once).
STORE_FULL_HELD = ("The relay could not save your message yet: the disk that holds its store is full. It will be "
                   "answered once there is room there.")
STORE_AWAY_HELD = "The relay's database is not answering just now; your message will be answered once it is back."
STORE_FAILED_HELD = "The relay could not save your message yet; it keeps trying and will answer it once it can."
#: A message the relay holds is offered to the store again after the first, twice as long each time, up to
#: the second (seconds).
HELD_RETRY_S = (1.0, 30.0)


class StoreError(RelayError):
    """The store cannot be used; ``path`` names the file (or the database, its password left out),
    ``detail`` says why. ``transient``: a network fault or a server starting up, worth trying again;
    otherwise a fact of the configuration or the data that trying again will not change. ``full``: the
    disk (or the database's space) is full, code ``store.full``; freeing space, not waiting, mends it."""

    code = "store"

    def __init__(self, path: str, detail: str, *, transient: bool = False, full: bool = False) -> None:
        self.path = path
        self.detail = detail
        self.full = full
        # Per-instance verdicts shadow the class ones:
        self.transient = transient  # type: ignore[misc]
        if full:
            self.code, self.prose = "store.full", STORE_FULL  # type: ignore[misc]
        elif transient:
            self.prose = STORE_AWAY  # type: ignore[misc]
        super().__init__(f"store {path}: {detail}")


@dataclass(slots=True)
class ConversationRecord:
    """A conversation's binding to an agent session.

    ``generation`` counts resets; an empty ``agent`` or ``cwd`` (a row created by a reset of an
    unknown key) means "not chosen yet: use the configured default".
    """

    key: str
    agent: str
    cwd: str
    session_id: str | None = None
    generation: int = 0
    model: str | None = None
    updated_at: float = 0.0
    #: ``_meta`` to send with ``session/load`` (Kiro ignores a load without its session file).
    session_meta: dict[str, Any] = field(default_factory=dict)
    #: The share of the context window in use when the agent last said (percent).
    context_pct: float | None = None
    #: The configured project chosen from the chat ("" none: the agent's own folder).
    project: str = ""
    #: The modes and select options chosen from the chat, one a line (a mode id, or ``configId=value``),
    #: applied again to each new session.
    mode: str | None = None
    #: The session's title, as the agent last gave it.
    title: str = ""
    #: What each of its sessions last reported it had cost: session id -> {amount, currency}.
    costs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def _row(self) -> tuple[Any, ...]:
        return (self.key, self.agent, self.cwd, self.session_id, self.generation, self.model, time.time(),
                json.dumps(self.session_meta), self.context_pct, self.project, self.mode, self.title,
                json.dumps(self.costs))

    @classmethod
    def _from_row(cls, row: tuple[Any, ...]) -> ConversationRecord:
        key, agent, cwd, session_id, generation, model, updated_at, meta, context_pct, project, mode, title, costs = row
        return cls(key, agent, cwd, session_id, generation, model, updated_at, json.loads(meta) if meta else {},
                   context_pct, project or "", mode, title or "", json.loads(costs) if costs else {})


@dataclass(frozen=True, slots=True)
class InboundRecord:
    """A journaled inbound message; ``seq`` gives arrival order."""

    seq: int
    surface: str
    message_id: str
    conversation_key: str
    payload: dict[str, Any]
    received_at: float
    progress: str = ""
    #: When the first platform message of its answer was posted (None: nothing shown yet).
    reply_started: float | None = None
    #: (title, kind) of each side-effecting tool call its turn saw run, in order.
    tools: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ReplyMessageRecord:
    """One platform message (or native stream, ``kind`` "stream") showing piece ``piece`` of part
    ``part`` of an answer."""

    part: int
    piece: int
    platform_id: str
    kind: str


@dataclass(frozen=True, slots=True)
class OutboundRecord:
    """A message the relay owes a conversation and has not yet delivered."""

    id: int
    conversation_key: str
    payload: dict[str, Any]
    created_at: float


def held_prose(exc: StoreError) -> str:
    """What a person reads while the relay holds their message the store refused, trying again."""
    if exc.full:
        return STORE_FULL_HELD
    return STORE_AWAY_HELD if exc.transient else STORE_FAILED_HELD


def disk_full(exc: BaseException) -> bool:
    """``exc`` says the disk is full: a ``StoreError`` marked so, or SQLite's SQLITE_FULL ("database or disk
    is full") from a file a surface keeps itself."""
    if isinstance(exc, StoreError):
        return exc.full
    return isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
