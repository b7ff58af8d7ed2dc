"""One turn's reply as typed blocks, folded from the turn's events. Pure: no I/O, no clock.

``parts`` gives each part as a tuple of ``core.engine.blocks`` in a fixed order: notices, plan, tool
lines, answer text, partial-answer notes, stop mark, refusal card, error prose, footer.
``to_markdown`` is their neutral wording, sections separated by a blank line (inside a section a
single newline is a line break).

A reply can be in several PARTS (``parts``), each shown in its own messages below the one before:
``break_here`` starts a new part, so after an approval prompt (or when a streamed message is too old
to keep editing) the answer continues below instead of in a message far above. A tool line, a notice
or the plan stays in the part where it first appeared (and is updated there); the text after a break,
and the closing sections (partial note, stop mark, refusal card, error prose, footer), go in the last.

A huge answer costs time in proportion to its length: once the last part holds ``PART_CHARS`` of
text it is left as it is at a paragraph break (a code block cut there is reopened in the next part),
and every part that did not change is handed out as the very same tuple of blocks, so whoever shows
the reply redoes only the part still growing. Past ``max_bytes`` (UTF-8) the answer stops with a
sentence saying so; the rest is kept (``overflow``) for the relay to offer as a file.
"""

from __future__ import annotations

from core.acp.error_text import squash, strip_echo
from core.acp.types import (
    STOP_REASON_CANCELLED,
    STOP_REASON_REFUSAL,
    AcpEvent,
    AgentNotice,
    CompactionStatus,
    Notice,
    PlanEntry,
    PlanUpdate,
    RateLimitNotice,
    RefusalInfo,
    TextChunk,
    ToolCall,
    TurnEnded,
)
from core.engine import wording
from core.engine.blocks import (
    Block,
    ErrorProse,
    Footer,
    Notices,
    Part,
    PartialNote,
    Plan,
    PlanStep,
    RefusalCard,
    StopMark,
    Text,
    ToolLine,
    Tools,
    markdown_of,
)
from core.engine.shared_files import edits_suffix
from core.engine.splitter import open_fence
from core.engine.switch_wording import agent_notice_line

__all__ = ["PART_CHARS", "Document"]

#: A part whose answer text reaches this many characters is left as it is at the next good break.
PART_CHARS = 64 * 1024


class Document:
    """One turn's reply, built by ``apply`` on each event and given out by ``parts``.

    Keyed notices (``Notice.key``) are corrected in place: a later notice with the same key
    replaces the earlier line, and an empty text removes it. Unkeyed notices are appended.
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        self._notices: list[tuple[str, str, int]] = []  # (key, text, part)
        self._plan: tuple[PlanEntry, ...] = ()
        self._plan_part = 0
        self._tools: dict[str, ToolCall] = {}
        self._tool_part: dict[str, int] = {}
        self._frozen: list[str] = []  # the answer text of each part before the last
        self._carry: list[str] = [""]  # per part: a code block's opening line it continues
        self._chunks: list[str] = []  # the last part's text, appended per chunk: linear, not quadratic
        self._open_chars = 0  # characters in ``_chunks``
        self._refusal: RefusalInfo | None = None
        self._error = ""
        self._reset = False  # the error prose suggests starting a new conversation
        self._partial_note = ""
        self._stopped = False  # the stop mark comes after the partial answer it stopped
        self._context_pct: float | None = None
        self._cost = ""
        self._elapsed_s: float | None = None
        self._max_bytes = max_bytes
        self._bytes = 0
        self._overflow: list[str] = []  # text past ``max_bytes``
        self._built: dict[int, Part] = {}  # part -> its blocks, while nothing in it changed

    @property
    def text(self) -> str:
        """The answer text streamed so far (after any echo removal; without what was cut)."""
        return "".join([*self._frozen, *self._chunks])

    def _open_text(self) -> str:
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    def _set_text(self, text: str) -> None:
        """Keep only the first ``len(text)`` characters of the answer (an echo was removed from its end)."""
        left = len(text)
        for i, frozen in enumerate(self._frozen):
            self._frozen[i] = frozen[:left]
            left = max(0, left - len(frozen))
        tail = self._open_text()[:left]
        self._chunks = [tail] if tail else []
        self._open_chars = len(tail)
        self._built.clear()

    @property
    def overflow(self) -> str:
        """The answer text past ``max_bytes``: not shown in the reply ("" when nothing was cut)."""
        return "".join(self._overflow)

    def apply(self, event: AcpEvent) -> None:
        """Fold one event into the document. Events it does not show are ignored."""
        if isinstance(event, TextChunk):
            self._append(event.text)
            return
        if isinstance(event, ToolCall):
            self._tool_part.setdefault(event.tool_call_id, self._part)
            self._tools[event.tool_call_id] = event
            self._built.pop(self._tool_part[event.tool_call_id], None)
            return
        self._built.pop(self._part, None)  # the rest is shown in the last part (or is kept in its own)
        if isinstance(event, PlanUpdate):
            if not self._plan:
                self._plan_part = self._part
            self._built.pop(self._plan_part, None)
            self._plan = event.entries
        elif isinstance(event, CompactionStatus) and event.status != "summary":  # the summary is not shown
            self.set_notice("compaction", wording.compaction_status_text(event.status))
        elif isinstance(event, RateLimitNotice):
            self.set_notice("rate_limit", wording.rate_limit_text(event.message))
        elif isinstance(event, AgentNotice):
            self._notices.append(("", agent_notice_line(event.severity, event.title, event.description), self._part))
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

    def _append(self, text: str) -> None:
        if self._overflow or (self._max_bytes is not None and self._bytes + len(text.encode()) > self._max_bytes):
            self._cut(text)
            return
        self._bytes += len(text.encode())
        self._chunks.append(text)
        self._open_chars += len(text)
        self._built.pop(self._part, None)
        if self._open_chars >= PART_CHARS:
            self._leave_part()

    def _cut(self, text: str) -> None:
        """The answer reached ``max_bytes``: what fits is shown, the rest kept aside."""
        if not self._overflow and self._max_bytes is not None:
            room = max(0, self._max_bytes - self._bytes)
            shown = text.encode()[:room].decode(errors="ignore")
            cut = shown.rfind("\n")  # a whole last line reads better than half a word
            shown = shown[: cut + 1] if cut > len(shown) // 2 else shown
            self._chunks.append(shown)
            self._open_chars += len(shown)
            self._bytes = self._max_bytes
            text = text[len(shown):]
            self._built.pop(self._part, None)
        self._overflow.append(text)

    def _leave_part(self) -> None:
        """The last part is long enough: it ends at its last paragraph break (or line break, in a
        code block); the text after it starts the next part."""
        text = self._open_text()
        cut = text.rfind("\n\n", len(text) // 2)
        cut = cut + 2 if cut != -1 else text.rfind("\n", len(text) // 2) + 1
        if cut <= 0:
            if len(text) < 2 * PART_CHARS:
                return  # no line break yet: wait for one
            cut = len(text)
        fence = open_fence(self._carry[-1] + text[:cut])
        self._chunks = [text[cut:]] if cut < len(text) else []
        self._open_chars = len(text) - cut
        self._frozen.append(text[:cut])
        self._carry.append(f"{fence}\n" if fence else "")
        self._built.pop(self._part - 1, None)

    @property
    def _part(self) -> int:
        return len(self._frozen)

    @property
    def part_count(self) -> int:
        """How many parts the reply has (see ``parts``)."""
        return len(self._frozen) + 1

    def break_here(self) -> None:
        """Start a new part: what comes next is shown below everything shown so far."""
        if self._frozen and not self._open_chars and not self._opened_since_break():
            return  # the last part is still empty: one part is enough
        self._frozen.append(self._open_text())
        self._chunks, self._open_chars = [], 0
        self._carry.append("")
        self._built.pop(self._part - 1, None)

    def _opened_since_break(self) -> bool:
        part = self._part
        return (any(p == part for p in self._tool_part.values()) or any(p == part for *_, p in self._notices)
                or (bool(self._plan) and self._plan_part == part))

    def set_notice(self, key: str, text: str) -> None:
        """Set (or, with empty ``text``, remove) the notice line under ``key``, keeping its place."""
        for i, (k, _, part) in enumerate(self._notices):
            if k == key:
                self._built.pop(part, None)
                if text:
                    self._notices[i] = (key, text, part)
                else:
                    del self._notices[i]
                return
        if text:
            self._notices.append((key, text, self._part))
            self._built.pop(self._part, None)

    def has_notice(self, key: str) -> bool:
        """True while a notice is shown under ``key``."""
        return any(k == key for k, _, _ in self._notices)

    def set_error(self, prose: str, raw_message: str = "", *, reset: bool = False) -> None:
        """Show ``prose`` for a failed turn (``reset``: it suggests starting a new conversation); streamed
        text that merely echoes the error is removed.

        Some agents stream the error text as an ordinary chunk just before the JSON-RPC error;
        the person sees it once (as the prose), not twice.
        """
        self._error = prose.strip()
        self._reset = reset
        self._built.pop(self._part, None)
        needle = squash(raw_message) + "\n" + squash(prose)
        self._set_text(strip_echo(self.text, needle))

    def drop_echo(self, streamed: str) -> None:
        """Remove text an attempt streamed that only echoed its error (the ladder retries)."""
        self._set_text(strip_echo(self.text, squash(streamed)))

    def set_partial_note(self, note: str = wording.PARTIAL_NOTE) -> None:
        """Mark the answer as incomplete (timeout with partial output, stop mid-answer)."""
        self._partial_note = note.strip()
        self._built.pop(self._part, None)

    def finish(self, elapsed_s: float, context_pct: float | None = None, cost: str = "") -> None:
        """Close the turn: adds the footer (time taken, and ``context_pct``, the share of the context
        window in use, when known: the session computes it from what the agent reports)."""
        self._elapsed_s = max(0.0, elapsed_s)
        self._context_pct = context_pct
        self._cost = cost
        self._built.pop(self._part, None)

    def to_markdown(self) -> str:
        """The whole reply as neutral Markdown (see the module docstring for the order)."""
        return "\n\n".join(m for m in (markdown_of(part) for part in self.parts()) if m)

    def parts(self) -> list[Part]:
        """The reply as parts, each shown below the one before (an empty part shows nothing). A part
        that did not change since the last call is the same tuple as then."""
        last = self._part
        out = [self._built.get(part) or self._build(part) for part in range(last + 1)]
        return out

    def _build(self, part: int) -> Part:
        last = part == self._part
        answer = self._open_text() if last else self._frozen[part]
        blocks = self._opening(part, self._carry[part] + answer if answer.strip() else answer)
        if last:
            closing = self._closing()
            if self._elapsed_s is not None and not closing and not blocks and not any(self.parts_before()):
                closing.append(Notices((wording.EMPTY_ANSWER,)))
            blocks += closing
            if self._elapsed_s is not None:
                blocks.append(Footer(self._elapsed_s, self._context_pct, self._cost))
        built = tuple(blocks)
        self._built[part] = built
        return built

    def parts_before(self) -> list[Part]:
        """The parts before the last one (as ``parts`` gives them)."""
        return [self._built.get(part) or self._build(part) for part in range(self._part)]

    def _opening(self, part: int, answer: str) -> list[Block]:
        """The notices, plan and tool lines that first appeared in ``part``, then its text."""
        blocks: list[Block] = []
        if self._notices:
            notices = tuple(t for _, t, p in self._notices if p == part)
            if notices:
                blocks.append(Notices(notices))
        if self._plan and self._plan_part == part:
            blocks.append(Plan(tuple(PlanStep(e.content, e.status) for e in self._plan)))
        if self._tools:
            tools = tuple(ToolLine(t.display + edits_suffix(t.display, t.diffs), t.kind, t.status)
                          for tid, t in self._tools.items()
                          if self._tool_part[tid] == part)
            if tools:
                blocks.append(Tools(tools))
        answer = answer.strip("\n")
        if answer.strip():
            blocks.append(Text(answer))
        return blocks

    def _closing(self) -> list[Block]:
        blocks: list[Block] = []
        if self._overflow and self._max_bytes is not None:
            blocks.append(PartialNote(wording.answer_cut_text(self._max_bytes)))
        if self._partial_note:
            blocks.append(PartialNote(self._partial_note))
        if self._stopped:
            blocks.append(StopMark())
        if self._refusal is not None:
            blocks.append(RefusalCard.of(self._refusal, streamed=self.text))
        if self._error:
            blocks.append(ErrorProse(self._error, self._reset))
        return blocks

