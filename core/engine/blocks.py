"""A reply as typed blocks: what the core hands a surface, and what a surface's formatter returns.

The core never sends a surface flat text whose structure the surface would have to guess. A reply
(one part of it: see ``core.engine.document``) is a tuple of ``Block``s in a fixed order: notices,
plan, tool lines, answer text, then the closing blocks (partial notes, stop mark, refusal card,
error prose) and the footer. Each block knows its NEUTRAL wording (``markdown()``: the core's own
sentences, in Markdown where a single newline is a line break), which is what a surface shows when
it does nothing special with that kind, and what the core splits on.

A surface has ONE ``Formatter``. ``render(blocks)`` turns a piece of a reply (the blocks, or parts
of them, that fit in one platform message) into the surface's own ``Rendered`` form once, and that
form says how long it is as the platform counts (``length``). The core cuts a reply at the
platform's limit by those lengths and hands the very ``Rendered`` it measured to ``Surface.send``,
``edit``, ``stream``..., which only deliver it: nothing is rendered twice. A formatter knows each
kind it styles by its type, never by its words: the footer, the refusal card (where a surface adds
its own "start again" hint, in its own spelling), error prose that suggests starting a new
conversation (``ErrorProse.reset``).

Room for more: a kind a formatter does not know is shown as its ``markdown()``, so a new kind (the
pickers, forms and files of the conversation-control and two-way issues) reaches every surface as
text first, and each formatter learns to draw it in its own time. A block cut in two by the
splitter reaches the formatter as ``Text`` of its words (a refusal card cut in half is no card).

``Text.closer`` marks the code fence the core closed at the end of a piece (the answer being
written ends inside a code block): a surface whose native stream only appends leaves it out while
the block goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from core.acp.types import RefusalInfo
from core.engine import wording

__all__ = [
    "Block",
    "Choices",
    "ErrorProse",
    "Footer",
    "FormCard",
    "Formatter",
    "Notices",
    "Part",
    "PartialNote",
    "Plan",
    "PlanStep",
    "RefusalCard",
    "Rendered",
    "StopMark",
    "Text",
    "ToolLine",
    "Tools",
    "block_from_json",
    "markdown_of",
    "rendered_as",
]


class Block:
    """One section of a reply. Subclasses are frozen dataclasses named by ``kind``."""

    __slots__ = ()
    kind: ClassVar[str]

    def markdown(self) -> str:
        """The core's neutral wording of the block (what a surface shows that draws it no other way)."""
        raise NotImplementedError

    def scrubbed(self, scrub: _Scrub) -> Block:
        """The same block with ``scrub`` applied to every text it shows (secrets redacted)."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        """A JSON object: ``type`` (the kind) and the block's fields (``block_from_json`` reads it)."""
        raise NotImplementedError


class _Scrub(Protocol):
    def __call__(self, text: str) -> str: ...


#: One part of a reply: its blocks, in order.
Part = tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class Text(Block):
    """Markdown: the agent's answer (untrusted), or a message of the core's own that is plain prose."""

    kind: ClassVar[str] = "text"
    text: str
    #: The code fence the core added at the end of ``text`` to close a block cut off there ("" if none).
    closer: str = ""

    def markdown(self) -> str:
        """The text itself."""
        return self.text

    def scrubbed(self, scrub: _Scrub) -> Text:
        """The text scrubbed."""
        return Text(scrub(self.text), self.closer)

    def to_json(self) -> dict[str, Any]:
        """``{"type": "text", "text": ...}``."""
        return {"type": self.kind, "text": self.text}


@dataclass(frozen=True, slots=True)
class Notices(Block):
    """The core's lines about the turn (retrying, compacting, a new session...), one per line."""

    kind: ClassVar[str] = "notice"
    lines: tuple[str, ...]

    def markdown(self) -> str:
        """One line each."""
        return "\n".join(self.lines)

    def scrubbed(self, scrub: _Scrub) -> Notices:
        """Each line scrubbed."""
        return Notices(tuple(scrub(line) for line in self.lines))

    def to_json(self) -> dict[str, Any]:
        """``{"type": "notice", "lines": [...]}``."""
        return {"type": self.kind, "lines": list(self.lines)}


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One entry of the agent's plan: its words and ``pending`` / ``in_progress`` / ``completed``."""

    content: str
    status: str

    def words(self) -> str:
        """The entry's words (``in progress`` marked), for a surface that draws the checkbox itself."""
        return wording.plan_words(self.content, self.status)


@dataclass(frozen=True, slots=True)
class Plan(Block):
    """The agent's plan, as a checklist."""

    kind: ClassVar[str] = "plan"
    steps: tuple[PlanStep, ...]

    def markdown(self) -> str:
        """A Markdown task list (``wording.plan_line``)."""
        return "\n".join(wording.plan_line(s.content, s.status) for s in self.steps)

    def scrubbed(self, scrub: _Scrub) -> Plan:
        """Each step's words scrubbed."""
        return Plan(tuple(PlanStep(scrub(s.content), s.status) for s in self.steps))

    def to_json(self) -> dict[str, Any]:
        """``{"type": "plan", "steps": [{"content", "status"}]}``."""
        return {"type": self.kind, "steps": [{"content": s.content, "status": s.status} for s in self.steps]}


@dataclass(frozen=True, slots=True)
class ToolLine:
    """One tool call: its title, ACP kind (``read``, ``execute``...) and status."""

    title: str
    kind: str
    status: str

    def line(self) -> str:
        """The core's line: glyph, then ``words`` (``✅ Read a.py (read): done``)."""
        return wording.tool_status_line(self.title, self.kind, self.status)

    def words(self) -> str:
        """The line without its glyph, for a surface that draws the status its own way."""
        return self.line().split(" ", 1)[1]


@dataclass(frozen=True, slots=True)
class Tools(Block):
    """The tool calls of the turn that first appeared in this part, one line each."""

    kind: ClassVar[str] = "tools"
    calls: tuple[ToolLine, ...]

    def markdown(self) -> str:
        """One line per call."""
        return "\n".join(c.line() for c in self.calls)

    def scrubbed(self, scrub: _Scrub) -> Tools:
        """Each title scrubbed."""
        return Tools(tuple(ToolLine(scrub(c.title), c.kind, c.status) for c in self.calls))

    def to_json(self) -> dict[str, Any]:
        """``{"type": "tools", "calls": [{"title", "kind", "status"}]}``."""
        return {"type": self.kind, "calls": [{"title": c.title, "kind": c.kind, "status": c.status}
                                             for c in self.calls]}


@dataclass(frozen=True, slots=True)
class PartialNote(Block):
    """Says the answer above is incomplete (the turn ended early, or the answer was cut at its size cap)."""

    kind: ClassVar[str] = "partial"
    text: str

    def markdown(self) -> str:
        """The note."""
        return self.text

    def scrubbed(self, scrub: _Scrub) -> PartialNote:
        """The note scrubbed."""
        return PartialNote(scrub(self.text))

    def to_json(self) -> dict[str, Any]:
        """``{"type": "partial", "text": ...}``."""
        return {"type": self.kind, "text": self.text}


@dataclass(frozen=True, slots=True)
class StopMark(Block):
    """The person stopped the turn here."""

    kind: ClassVar[str] = "stopped"

    def markdown(self) -> str:
        """``wording.STOPPED``."""
        return wording.STOPPED

    def scrubbed(self, scrub: _Scrub) -> StopMark:
        """Nothing to scrub."""
        return self

    def to_json(self) -> dict[str, Any]:
        """``{"type": "stopped"}``."""
        return {"type": self.kind}


@dataclass(frozen=True, slots=True)
class RefusalCard(Block):
    """The model declined: the lead line, then what the provider said (fields left empty are not shown)."""

    kind: ClassVar[str] = "refusal"
    category: str = ""
    why: str = ""
    model: str = ""

    @classmethod
    def of(cls, info: RefusalInfo, streamed: str = "") -> RefusalCard:
        """The card for ``info`` (``wording.refusal_fields``: the Why left out when ``streamed`` says it)."""
        category, why, model = wording.refusal_fields(info, streamed)
        return cls(category, why, model)

    def lines(self) -> list[str]:
        """The lead line, then one line per field the provider gave (``wording.refusal_card_lines``)."""
        return wording.refusal_card_lines(self.category, self.why, self.model)

    def markdown(self) -> str:
        """``lines``, one per line."""
        return "\n".join(self.lines())

    def scrubbed(self, scrub: _Scrub) -> RefusalCard:
        """The provider's words scrubbed."""
        return RefusalCard(scrub(self.category), scrub(self.why), scrub(self.model))

    def to_json(self) -> dict[str, Any]:
        """``{"type": "refusal", "category", "why", "model"}``."""
        return {"type": self.kind, "category": self.category, "why": self.why, "model": self.model}


@dataclass(frozen=True, slots=True)
class ErrorProse(Block):
    """Why the turn failed, in plain words (``core.failures``); ``reset``: the prose suggests starting a
    new conversation, so a surface may add its own way of doing that."""

    kind: ClassVar[str] = "error"
    text: str
    reset: bool = False

    def markdown(self) -> str:
        """The prose."""
        return self.text

    def scrubbed(self, scrub: _Scrub) -> ErrorProse:
        """The prose scrubbed."""
        return ErrorProse(scrub(self.text), self.reset)

    def to_json(self) -> dict[str, Any]:
        """``{"type": "error", "text", "reset"}``."""
        return {"type": self.kind, "text": self.text, "reset": self.reset}


@dataclass(frozen=True, slots=True)
class Footer(Block):
    """The turn is over: how long it took, the context used and what the turn cost, when the agent said."""

    kind: ClassVar[str] = "footer"
    elapsed_s: float
    context_pct: float | None = None
    #: The turn's cost in words (``0.03 USD``), "" when the agent did not report it.
    cost: str = ""

    def markdown(self) -> str:
        """``wording.footer_text`` (``⏱ 12.3s · context 45% · 0.03 USD``)."""
        return wording.footer_text(self.elapsed_s, self.context_pct, self.cost)

    def words(self) -> str:
        """The footer without its glyph, for a surface that draws its own."""
        return self.markdown().removeprefix(wording.FOOTER_GLYPH).strip()

    def scrubbed(self, scrub: _Scrub) -> Footer:
        """Nothing to scrub."""
        return self

    def to_json(self) -> dict[str, Any]:
        """``{"type": "footer", "elapsed_s", "context_pct", "cost"}``."""
        return {"type": self.kind, "elapsed_s": self.elapsed_s, "context_pct": self.context_pct, "cost": self.cost}


@dataclass(frozen=True, slots=True)
class Choices(Block):
    """A picker: a prompt line and the options to choose from (projects, agents, sessions, modes).

    On a surface with buttons the options come as the message's buttons (one each, in order, and a
    last one for the next page when ``more``), and ``numbered`` is False: the block's words are the
    prompt alone. Without buttons, ``numbered``: the options are numbered lines, and the person
    replies with a number. ``current`` is the index of the option in use (-1: none).
    """

    kind: ClassVar[str] = "choices"
    prompt: str
    options: tuple[str, ...] = ()
    numbered: bool = False
    current: int = -1
    more: bool = False

    def lines(self) -> list[str]:
        """The numbered option lines (the one in use marked)."""
        return [f"{i}. {label}" + (" (current)" if i - 1 == self.current else "")
                for i, label in enumerate(self.options, start=1)]

    def markdown(self) -> str:
        """The prompt; with ``numbered``, the options one a line and how to choose."""
        if not self.numbered or not self.options:
            return self.prompt
        return "\n".join([self.prompt, *self.lines(), wording.CHOOSE_BY_NUMBER])

    def scrubbed(self, scrub: _Scrub) -> Choices:
        """The prompt and every label scrubbed."""
        return Choices(scrub(self.prompt), tuple(scrub(o) for o in self.options), self.numbered, self.current,
                       self.more)

    def to_json(self) -> dict[str, Any]:
        """``{"type": "choices", "prompt", "options", "numbered", "current", "more"}``."""
        return {"type": self.kind, "prompt": self.prompt, "options": list(self.options), "numbered": self.numbered,
                "current": self.current, "more": self.more}


@dataclass(frozen=True, slots=True)
class FormCard(Block):
    """The agent asks the person (an ACP form, or a link to open): its question (the agent's words,
    untrusted), the answers given so far, the field being asked now, and once settled its outcome.

    ``choices`` are numbered only where the surface has no buttons (the buttons carry them
    otherwise); ``hint`` says how to answer; ``url`` is a link the relay never opens itself;
    ``reply_wanted``: the field asked now is answered by writing (a surface may open the reply box);
    ``settled``: how it ended, once it has (``accept``, ``decline``, ``cancel``, ``timed_out``,
    ``stopped``), for a surface that draws the outcome its own way (``outcome_words``).
    """

    kind: ClassVar[str] = "form"
    message: str
    answers: tuple[tuple[str, str], ...] = ()
    question: str = ""
    choices: tuple[str, ...] = ()
    hint: str = ""
    url: str = ""
    outcome: str = ""
    reply_wanted: bool = False
    settled: str = ""

    def outcome_words(self) -> str:
        """The outcome line without its glyph."""
        return self.outcome.split(" ", 1)[-1] if self.outcome else ""

    def lines(self, *, styled: bool = False) -> list[str]:
        """``❓`` and the question, the link, the answers, the field asked now, its numbered choices, the
        hint and the outcome, one per line, as plain words (``styled``: the link in a code span, never
        a link the platform previews, and the field asked now in bold Markdown)."""
        out = [f"❓ {self.message}" if self.message else "❓"]
        if self.url:
            out.append(f"`{self.url}`" if styled else self.url)
        out += [f"• {title}: {value}" for title, value in self.answers]
        if self.question:
            out.append(f"**{self.question}**" if styled else self.question)
        out += [f"{i}. {choice}" for i, choice in enumerate(self.choices, 1)]
        out += [line for line in (self.hint, self.outcome) if line]
        return out

    def markdown(self) -> str:
        """``lines``, styled, one per line."""
        return "\n".join(self.lines(styled=True))

    def scrubbed(self, scrub: _Scrub) -> FormCard:
        """Every word scrubbed (the agent's question, titles, answers)."""
        return FormCard(scrub(self.message), tuple((scrub(t), scrub(v)) for t, v in self.answers),
                        scrub(self.question), tuple(scrub(c) for c in self.choices), scrub(self.hint),
                        scrub(self.url), self.outcome, self.reply_wanted, self.settled)

    def to_json(self) -> dict[str, Any]:
        """``{"type": "form", "message", "answers", "question", "choices", "hint", "url", "outcome", "text"}``."""
        return {"type": self.kind, "message": self.message, "answers": [list(a) for a in self.answers],
                "question": self.question, "choices": list(self.choices), "hint": self.hint, "url": self.url,
                "outcome": self.outcome, "reply_wanted": self.reply_wanted, "settled": self.settled,
                "text": self.markdown()}


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def block_from_json(data: Mapping[str, Any]) -> Block:
    """The block ``Block.to_json`` gave (an unknown kind is its ``text``, or nothing, as ``Text``)."""
    kind, text = data.get("type"), str(data.get("text") or "")
    if kind == Notices.kind:
        return Notices(tuple(str(line) for line in data.get("lines") or ()))
    if kind == Plan.kind:
        return Plan(tuple(PlanStep(str(s.get("content", "")), str(s.get("status", "")))
                          for s in data.get("steps") or ()))
    if kind == Tools.kind:
        return Tools(tuple(ToolLine(str(c.get("title", "")), str(c.get("kind", "")), str(c.get("status", "")))
                           for c in data.get("calls") or ()))
    if kind == PartialNote.kind:
        return PartialNote(text)
    if kind == StopMark.kind:
        return StopMark()
    if kind == RefusalCard.kind:
        return RefusalCard(str(data.get("category") or ""), str(data.get("why") or ""), str(data.get("model") or ""))
    if kind == ErrorProse.kind:
        return ErrorProse(text, bool(data.get("reset")))
    if kind == Footer.kind:
        return Footer(_float(data.get("elapsed_s")) or 0.0, _float(data.get("context_pct")),
                      str(data.get("cost") or ""))
    if kind == Choices.kind:
        current = data.get("current")
        return Choices(str(data.get("prompt") or ""), tuple(str(o) for o in data.get("options") or ()),
                       bool(data.get("numbered")), current if isinstance(current, int) else -1, bool(data.get("more")))
    if kind == FormCard.kind:
        return FormCard(str(data.get("message") or ""),
                        tuple((str(a[0]), str(a[1])) for a in data.get("answers") or () if len(a) == 2),
                        str(data.get("question") or ""), tuple(str(c) for c in data.get("choices") or ()),
                        str(data.get("hint") or ""), str(data.get("url") or ""), str(data.get("outcome") or ""),
                        bool(data.get("reply_wanted")), str(data.get("settled") or ""))
    return Text(text)


def markdown_of(blocks: Sequence[Block]) -> str:
    """The blocks' neutral wording, one paragraph each (what the core splits, and what a Markdown
    surface shows of kinds it draws no other way)."""
    if len(blocks) == 1:  # a piece of one block: the usual case, on every cut the splitter tries
        return blocks[0].markdown()
    return "\n\n".join([m for b in blocks if (m := b.markdown())])


class Rendered(Protocol):
    """A piece of a reply in one surface's own form, made once by its ``Formatter``."""

    @property
    def length(self) -> int:
        """How long it is as the platform counts against ``Capabilities.max_message_length``."""
        ...


class Formatter(Protocol):
    """Renders blocks the way one surface shows them; a surface has exactly one."""

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> Rendered:
        """``blocks`` as one platform message. ``plain``: the platform rejected the markup, and the
        core has already taken it out: the blocks are ``Text`` to be shown exactly as they are."""
        ...


_R = TypeVar("_R")


def rendered_as(message: Rendered, kind: type[_R]) -> _R:
    """``message`` as the surface's own form ``kind``; a ``TypeError`` when another formatter made it."""
    if not isinstance(message, kind):
        raise TypeError(f"not rendered by this surface's formatter: {type(message).__name__}")
    return message
