"""The neutral rendering of one turn, folded from the turn's events. Pure: no I/O, no clock.

``to_markdown`` emits neutral Markdown in a fixed order: notices, plan, tool lines, answer text,
partial-answer note, stop mark, refusal card, error prose, footer. Sections are separated by a blank
line; inside a section a single newline is a line break.

A reply can be in several PARTS (``parts``), each shown in its own messages below the one before:
``break_here`` starts a new part, so after an approval prompt (or when a streamed message is too old
to keep editing) the answer continues below instead of in a message far above. A tool line, a notice
or the plan stays in the part where it first appeared (and is updated there); the text after a break,
and the closing sections (partial note, stop mark, refusal card, error prose, footer), go in the last.
"""

from __future__ import annotations

import re

from core.acp.types import (
    STOP_REASON_CANCELLED,
    STOP_REASON_REFUSAL,
    AcpEvent,
    CompactionStatus,
    KiroMetadata,
    Notice,
    PlanEntry,
    PlanUpdate,
    RateLimitNotice,
    RefusalInfo,
    TextChunk,
    ToolCall,
    TurnEnded,
    UsageUpdate,
)
from core.engine import wording

__all__ = ["Document"]

#: A suffix shorter than this is not treated as an echo of the error (a word such as "Error"
#: at the end of a real answer must survive).
_MIN_ECHO = 8
_SENTENCE_START = re.compile(r"(?:^|\n|(?<=[.!?:;])[ \t]+)")


def _squash(text: str) -> str:
    return " ".join(text.split())


class Document:
    """One turn's reply, built by ``apply`` on each event and rendered by ``to_markdown``.

    Keyed notices (``Notice.key``) are corrected in place: a later notice with the same key
    replaces the earlier line, and an empty text removes it. Unkeyed notices are appended.
    """

    def __init__(self) -> None:
        self._notices: list[tuple[str, str, int]] = []  # (key, text, part)
        self._plan: tuple[PlanEntry, ...] = ()
        self._plan_part = 0
        self._tools: dict[str, ToolCall] = {}
        self._tool_part: dict[str, int] = {}
        self._breaks: list[int] = []  # offsets into the text where parts 1, 2... begin
        self._chunks: list[str] = []  # appended per chunk, joined only when read: linear, not quadratic
        self._refusal: RefusalInfo | None = None
        self._error = ""
        self._partial_note = ""
        self._stopped = False  # the stop mark comes after the partial answer it stopped
        self._context_pct: float | None = None
        self._elapsed_s: float | None = None

    @property
    def text(self) -> str:
        """The answer text streamed so far (after any echo removal)."""
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    def _set_text(self, text: str) -> None:
        self._chunks = [text] if text else []

    @property
    def context_pct(self) -> float | None:
        """The last context usage the agent reported, in percent."""
        return self._context_pct

    def apply(self, event: AcpEvent) -> None:
        """Fold one event into the document. Events it does not show are ignored."""
        if isinstance(event, TextChunk):
            self._chunks.append(event.text)
        elif isinstance(event, ToolCall):
            self._tool_part.setdefault(event.tool_call_id, self._part)
            self._tools[event.tool_call_id] = event
        elif isinstance(event, PlanUpdate):
            if not self._plan:
                self._plan_part = self._part
            self._plan = event.entries
        elif isinstance(event, KiroMetadata):
            if event.context_pct is not None:
                self._context_pct = event.context_pct
        elif isinstance(event, UsageUpdate):
            if event.used is not None and event.size:
                self._context_pct = event.used / event.size * 100
        elif isinstance(event, CompactionStatus):
            self.set_notice("compaction", wording.compaction_status_text(event.status))
        elif isinstance(event, RateLimitNotice):
            self.set_notice("rate_limit", wording.rate_limit_text(event.message))
        elif isinstance(event, Notice):
            if event.key:
                self.set_notice(event.key, event.text)
            elif event.text:
                self._notices.append(("", event.text, self._part))
        elif isinstance(event, TurnEnded):
            if event.stop_reason == STOP_REASON_REFUSAL:
                self._refusal = event.refusal or RefusalInfo()
            elif event.stop_reason == STOP_REASON_CANCELLED:
                self._stopped = True

    @property
    def _part(self) -> int:
        return len(self._breaks)

    @property
    def part_count(self) -> int:
        """How many parts the reply has (see ``parts``)."""
        return len(self._breaks) + 1

    def break_here(self) -> None:
        """Start a new part: what comes next is shown below everything shown so far."""
        if self._breaks and self._breaks[-1] >= len(self.text) and not self._opened_since_break():
            return  # the last part is still empty: one part is enough
        self._breaks.append(len(self.text))

    def _opened_since_break(self) -> bool:
        part = self._part
        return (any(p == part for p in self._tool_part.values()) or any(p == part for *_, p in self._notices)
                or (bool(self._plan) and self._plan_part == part))

    def set_notice(self, key: str, text: str) -> None:
        """Set (or, with empty ``text``, remove) the notice line under ``key``, keeping its place."""
        for i, (k, _, part) in enumerate(self._notices):
            if k == key:
                if text:
                    self._notices[i] = (key, text, part)
                else:
                    del self._notices[i]
                return
        if text:
            self._notices.append((key, text, self._part))

    def has_notice(self, key: str) -> bool:
        """True while a notice is shown under ``key``."""
        return any(k == key for k, _, _ in self._notices)

    def set_error(self, prose: str, raw_message: str = "") -> None:
        """Show ``prose`` for a failed turn; streamed text that merely echoes the error is removed.

        Some agents stream the error text as an ordinary chunk just before the JSON-RPC error;
        the person sees it once (as the prose), not twice.
        """
        self._error = prose.strip()
        needle = _squash(raw_message) + "\n" + _squash(prose)
        self._set_text(_strip_echo(self.text, needle))

    def drop_echo(self, streamed: str) -> None:
        """Remove text an attempt streamed that only echoed its error (the ladder retries)."""
        self._set_text(_strip_echo(self.text, _squash(streamed)))

    def set_partial_note(self, note: str = wording.PARTIAL_NOTE) -> None:
        """Mark the answer as incomplete (timeout with partial output, stop mid-answer)."""
        self._partial_note = note.strip()

    def finish(self, elapsed_s: float, context_pct: float | None = None) -> None:
        """Close the turn: adds the footer (time taken, and context usage when known).

        ``context_pct`` is used when no event of this turn reported the context usage.
        """
        self._elapsed_s = max(0.0, elapsed_s)
        if self._context_pct is None:
            self._context_pct = context_pct

    def to_markdown(self) -> str:
        """The whole reply as neutral Markdown (see the module docstring for the order)."""
        return "\n\n".join(part for part in self.parts() if part)

    def parts(self) -> list[str]:
        """The reply as parts, each shown below the one before (an empty part shows nothing)."""
        text, last = self.text, len(self._breaks)
        if last:
            bounds = [0, *(min(b, len(text)) for b in self._breaks), len(text)]
            out = [self._opening(part, text[bounds[part]:bounds[part + 1]]) for part in range(last + 1)]
        else:  # the usual reply: one part, no slicing
            out = [self._opening(0, text)]
        closing = self._closing()
        if self._elapsed_s is not None and not closing and not any(out):
            closing.append(wording.EMPTY_ANSWER)
        out[last] += closing
        if self._elapsed_s is not None:
            out[last].append(wording.footer_text(self._elapsed_s, self._context_pct))
        return ["\n\n".join(sections) for sections in out]

    def _opening(self, part: int, answer: str) -> list[str]:
        """The notices, plan and tool lines that first appeared in ``part``, then its text."""
        sections: list[str] = []
        if self._notices:
            notices = [t for _, t, p in self._notices if p == part]
            if notices:
                sections.append("\n".join(notices))
        if self._plan and self._plan_part == part:
            sections.append("\n".join(wording.plan_line(e.content, e.status) for e in self._plan))
        if self._tools:
            tools = [t for tid, t in self._tools.items() if self._tool_part[tid] == part]
            if tools:
                sections.append("\n".join(wording.tool_status_line(t.display, t.kind, t.status) for t in tools))
        answer = answer.strip("\n")
        if answer.strip():
            sections.append(answer)
        return sections

    def _closing(self) -> list[str]:
        sections: list[str] = []
        if self._partial_note:
            sections.append(self._partial_note)
        if self._stopped:
            sections.append(wording.STOPPED)
        if self._refusal is not None:
            sections.append(wording.refusal_card_text(self._refusal, streamed=self.text))
        if self._error:
            sections.append(self._error)
        return sections


def _strip_echo(text: str, needle: str) -> str:
    """Drop the longest trailing run of whole lines or sentences of ``text`` found in ``needle``."""
    if not text.strip() or not needle.strip():
        return text
    # An echo cannot be longer than the needle (modulo whitespace), so only look that far back.
    window_start = max(0, len(text) - 2 * len(needle) - 64)
    for m in _SENTENCE_START.finditer(text, window_start):
        start = m.end()
        tail = _squash(text[start:])
        if len(tail) >= _MIN_ECHO and tail in needle:
            return text[:start].rstrip()
    return text
