"""The terminal as a surface, for ``acp-relay ask``: stdout carries the answer as it streams; stderr
the tool lines, the notices, the retries and the prose; the approval question is asked on the
terminal itself (y = allow once, a = allow this command or target for this session, anything else
= deny), and only when stdin is a terminal (otherwise nobody can be asked).

It runs through the same Engine and turn as every chat (``core.ask``): the terminal is attached as
a surface named ``terminal`` (what the core says outside a turn, such as a stop the agent ignored,
goes to stderr), and :class:`TerminalReplies` shows each turn. Each tool call is one ``[tool]`` line
on stderr, written when it ends (or when the turn does); claude-code-acp's doubled ``tool_call`` is
written once. A notice is written when its words change (a "still retrying" line every so often).
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from core.acp.exchange import ElicitationRequest
from core.acp.types import (
    TOOL_STATUS_DENIED,
    AcpEvent,
    AgentNotice,
    CompactionStatus,
    Notice,
    PermissionRequest,
    RateLimitNotice,
    RefusalInfo,
    TextChunk,
    ToolCall,
    TurnEnded,
)
from core.engine import wording
from core.engine.approvals import scope_key
from core.engine.blocks import Block, Rendered, markdown_of, rendered_as
from core.engine.messages import Button, QueueItem
from core.engine.reply import Retrying, TurnOutcome, TurnScope
from core.engine.surface import Capabilities, SurfaceDefaults
from core.engine.switch_wording import agent_notice_line

__all__ = ["TerminalFormatter", "TerminalReplies", "TerminalReply", "TerminalSurface", "TerminalText", "read_answer"]

_FINAL = frozenset({"completed", "failed", "cancelled", TOOL_STATUS_DENIED})


@dataclass(frozen=True, slots=True)
class TerminalText:
    """What the terminal shows: the blocks' neutral Markdown, as it is."""

    text: str

    @property
    def length(self) -> int:
        """Characters (the terminal has no limit of its own)."""
        return len(self.text)


class TerminalFormatter:
    """Every block as its neutral words: a terminal has no markup to style them with."""

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> TerminalText:
        """``blocks`` as plain text."""
        return TerminalText(markdown_of(blocks))


class TerminalSurface(SurfaceDefaults):
    """The terminal's side of the seam: plain lines on stderr. A turn is shown by TerminalReplies."""

    name = "terminal"
    capabilities = Capabilities(max_message_length=1_000_000, can_edit=False, can_delete=False,
                                can_buttons=False, can_typing=False)
    commands: Mapping[str, str] = {}
    formatter = TerminalFormatter()

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self._ids = itertools.count(1)

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        """A line for the person at the terminal."""
        self.err.write(rendered_as(message, TerminalText).text.rstrip("\n") + "\n")
        self.err.flush()
        return str(next(self._ids))

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        """Never called: the terminal cannot edit (``can_edit`` is False)."""

    async def delete(self, conversation_key: str, message_id: str) -> None:
        """Never called (``can_delete`` is False)."""

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        """Never called (``can_typing`` is False)."""


async def read_answer(fd: int) -> str:
    """One line typed on ``fd``, read on the event loop (no thread): cancelling this really stops it,
    so Ctrl-C and the approval timeout do not wait for Enter. End of input or an error reads as ""."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not answer.done():
            answer.set_result(data.decode(errors="replace"))

    loop.add_reader(fd, readable)
    try:
        return await answer
    finally:
        loop.remove_reader(fd)


class TerminalReplies:
    """Shows each turn on the terminal; ``finished`` receives the last turn's outcome."""

    def __init__(self, out: TextIO, err: TextIO, *, answer_fd: int | None) -> None:
        self.out, self.err = out, err
        self.answer_fd = answer_fd  # where approval answers are typed; None: nobody can be asked
        self.finished: asyncio.Future[TurnOutcome] = asyncio.get_running_loop().create_future()

    @asynccontextmanager
    async def open(self, scope: TurnScope, item: QueueItem) -> AsyncIterator[TerminalReply]:
        """The terminal's reply to ``item``."""
        yield TerminalReply(self)


class TerminalReply:
    """One turn on the terminal."""

    def __init__(self, replies: TerminalReplies) -> None:
        self.replies = replies
        self.out, self.err = replies.out, replies.err
        self.can_ask = replies.answer_fd is not None
        self.wrote_text = False  # anything on stdout at all (for the closing newline)
        self.tools: dict[str, ToolCall] = {}  # tool calls by id, until their line is written
        self.written: set[str] = set()
        self.said: dict[str, str] = {}  # notice key -> the words last written

    def _line(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()

    def show(self, event: AcpEvent) -> None:
        """The answer to stdout as it comes; tool lines, retries and notices to stderr."""
        if isinstance(event, TextChunk):
            if event.text:
                self.out.write(event.text)
                self.out.flush()
                self.wrote_text = True
        elif isinstance(event, ToolCall):
            # claude-code-acp sends tool_call twice for one call: one line per call, once it ends
            if event.status in _FINAL and event.tool_call_id not in self.written:
                self.tools.pop(event.tool_call_id, None)
                self.written.add(event.tool_call_id)
                self._tool_line(event)
            elif event.tool_call_id not in self.written:
                self.tools[event.tool_call_id] = event
        elif isinstance(event, Retrying):
            self._line(f"{event.failure.prose} (retrying in {event.delay_s:.0f}s)")
        elif isinstance(event, Notice):
            self._notice(event.key, event.text)
        elif isinstance(event, CompactionStatus):
            self._notice("compaction", wording.compaction_status_text(event.status))
        elif isinstance(event, RateLimitNotice):
            self._notice("rate_limit", wording.rate_limit_text(event.message))
        elif isinstance(event, AgentNotice):
            self._line(agent_notice_line(event.severity, event.title, event.description))
        elif isinstance(event, TurnEnded):
            self._tool_lines()

    def _notice(self, key: str, text: str) -> None:
        """A notice line; one corrected in place in a chat is written again only when its words change."""
        if text and (not key or self.said.get(key) != text):
            self.said[key] = text
            self._line(text)

    def _tool_line(self, call: ToolCall) -> None:
        self._line(f"[tool] {call.display or call.kind} ({call.status})")

    def _tool_lines(self) -> None:
        """One line for each tool call not written yet (the turn ended before they did)."""
        for call in self.tools.values():
            self._tool_line(call)
        self.tools.clear()

    def take_back(self, text: str) -> None:
        """What reached stdout stays there (a lone chunk that reads like an error never got there)."""

    async def approve(self, request: PermissionRequest) -> str:
        """Ask on the terminal: y = allow once, a = allow this command (or target) for this session,
        anything else (or end of input) = deny."""
        fd = self.replies.answer_fd
        if fd is None:
            return "cancelled"
        key, call, err = scope_key(request), request.tool_call, self.err
        what = call.display or call.kind
        err.write(f"Allow tool call: {what}? (y = once, a = allow `{key[2]}` for this session) [y/a/N] "
                  if key else f"Allow tool call: {what}? [y/N] ")
        err.flush()
        try:
            answer = await read_answer(fd)
        except asyncio.CancelledError:  # stopped, or no answer in time: end the question's line
            self._line("")
            raise
        return {"y": "allow_once", "a": "allow_always"}.get(answer.strip().lower()[:1], "reject_once")

    async def elicit(self, request: ElicitationRequest) -> dict[str, Any]:
        """The terminal shows no forms: the agent is told no, and the person why."""
        self._line(f"The agent asked a question the terminal cannot show, so it was declined: {request.message}")
        return {"action": "decline"}

    async def finish(self, outcome: TurnOutcome) -> None:
        """Close the answer's line, then say how the turn ended when it is not the answer itself."""
        self._tool_lines()
        if self.wrote_text:
            self.out.write("\n")
            self.out.flush()
        if outcome.described is not None:
            self._line(outcome.described.prose)
        elif outcome.refused:
            self._line(wording.refusal_card_text(outcome.refusal or RefusalInfo(), streamed=outcome.text))
        elif outcome.empty:  # never a silent success: the person is told, and a script sees exit 1
            self._line(wording.EMPTY_ANSWER)
        if not self.replies.finished.done():
            self.replies.finished.set_result(outcome)
