"""The agent's text that is really an error, told from an answer in one place.

Agents say a failure in their answer text as often as in a JSON-RPC error, and a person should read
it once, as the relay's prose, never as if it were the answer:

- claude-agent-acp streams a failed model call's text ("API Error: 400 Improperly formed request.",
  "Invalid API key · Fix external API key") as an ordinary chunk just before the JSON-RPC error, and
  codex-acp 0.16 the provider's JSON. An attempt's first chunk is held while it reads like a failure
  (the same ``RE_*`` rows as every error, plus the raw shapes): more text, or the turn ending,
  releases it; the attempt failing with that very error drops it (:class:`AttemptText`,
  :func:`is_echo`), and a longer echo already shown is taken back (:func:`strip_echo`).
- codex-acp 2.x answers a failed model call with no error at all: ``session_info_update`` with
  ``_meta.codex.threadStatus.type`` ``systemError``, the provider's text (the raw JSON body of a 400,
  "exceeded retry limit, last status: 429 Too Many Requests") as an ``agent_message_chunk``, then
  ``end_turn``. That text is kept back from the turn's events and the prompt raises the AcpError it
  stands for (:class:`ThreadFailure`).
- Copilot CLI (backend ``copilot``, a known rule for its own text shape, never a guess on another
  agent's text) writes its status as whole answer chunks: ``Info: Request failed due to a transient
  API error. Retrying...`` while it retries a model call, ``Info: Operation cancelled by user`` after
  a denial, and ``Error: 400 ...`` / ``Error: Failed to get response from the AI model; retried 5
  times ... Last error: 429 ...`` / ``Error: Authentication failed with provider at <url> (HTTP
  401).`` when the call failed, then ``end_turn``. Those chunks are kept back; an ``Error:`` one is
  the turn's failure unless answer text follows it. The provider's URL is never part of what a
  person reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from core.acp._dispatch import refusal_from_error
from core.acp.types import THREAD_SYSTEM_ERROR, AcpEvent, Notice, RefusalInfo, SessionInfo, TextChunk, TurnEnded
from core.errors import AcpError
from core.failures import classify, error_from_rpc, text_kind

__all__ = [
    "AGENT_RETRYING",
    "AttemptText",
    "RawErrorHold",
    "ThreadFailure",
    "echoes_error",
    "is_echo",
    "reads_like_raw_error",
    "squash",
    "strip_echo",
]

# claude-agent-acp's "API Error: ..." prefix, or a provider's JSON error body.
_RE_RAW = re.compile(r"""^\s*(?:(?:internal error:\s*)?api error\b|\{\s*"(?:type|error)"\s*:)""", re.I)


def reads_like_raw_error(text: str) -> bool:
    """True when ``text`` says nothing but that something failed."""
    said = text.strip()
    return bool(said) and (bool(_RE_RAW.match(said)) or text_kind(said) != "unknown")


def echoes_error(text: str, error: BaseException) -> bool:
    """True when ``text`` only repeats the error's own words: claude-agent-acp and codex-acp stream the
    error as an ordinary chunk just before the JSON-RPC error, and a person should read it once."""
    said = " ".join(text.split())
    if not said:
        return False
    data = getattr(error, "data", None)
    raw = " ".join(f"{getattr(error, 'message', '') or error} {json.dumps(data) if data is not None else ''}".split())
    return said in raw or said in " ".join(str(data).split())


def is_echo(text: str, error: BaseException) -> bool:
    """``text`` is only ``error`` in the agent's words: the same words, or on its own the same kind
    of failure (claude-agent-acp 0.101 streams "Invalid API key" before "Authentication required")."""
    if echoes_error(text, error):
        return True
    return reads_like_raw_error(text) and text_kind(text) == classify(error).kind


class RawErrorHold:
    """One attempt's first text chunk, while it reads like a raw provider error and nothing follows."""

    def __init__(self) -> None:
        self._held: list[TextChunk] = []
        self._open = True  # nothing but raw-error text has streamed yet in this attempt

    def take(self, event: AcpEvent) -> list[AcpEvent]:
        """The events to show now, in order, for ``event`` (none while it is held)."""
        if isinstance(event, TextChunk) and self._open:
            if not event.text.strip():
                if not self._held:
                    return [event]  # nothing said yet
                self._held.append(event)
                return []
            if not self._held and reads_like_raw_error(event.text):
                self._held.append(event)
                return []
            self._open = False  # more words: an answer, shown from its start
        elif not isinstance(event, TextChunk | TurnEnded):
            return [event]
        shown: list[AcpEvent] = [*self._held, event]
        self._held = []
        return shown

    def release(self) -> list[AcpEvent]:
        """What was held, to show after all (the attempt failed with another error)."""
        shown: list[AcpEvent] = list(self._held)
        self._held = []
        return shown

    def drop(self) -> None:
        """Forget what was held: it was the attempt's error, which the person reads as prose."""
        self._held = []

#: A suffix shorter than this is not taken for an echo of the error (a word such as "Error" at the
#: end of a real answer must survive).
_MIN_ECHO = 8
_SENTENCE_START = re.compile(r"(?:^|\n|(?<=[.!?:;])[ \t]+)")


def squash(text: str) -> str:
    """``text`` with every run of whitespace one space (how an echo is compared)."""
    return " ".join(text.split())


def strip_echo(text: str, needle: str) -> str:
    """Drop the longest trailing run of whole lines or sentences of ``text`` found in ``needle`` (the
    error's own words, squashed): what an agent streamed just before failing with them."""
    if not text.strip() or not needle.strip():
        return text
    # An echo cannot be longer than the needle (modulo whitespace), so only look that far back.
    window_start = max(0, len(text) - 2 * len(needle) - 64)
    for m in _SENTENCE_START.finditer(text, window_start):
        start = m.end()
        tail = squash(text[start:])
        if len(tail) >= _MIN_ECHO and tail in needle:
            return text[:start].rstrip()
    return text


class AttemptText:
    """One attempt's answer text, as far as telling an answer from an error's words goes."""

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._hold = RawErrorHold()

    @property
    def text(self) -> str:
        """What the attempt streamed so far (held text included)."""
        return "".join(self._chunks)

    @property
    def streamed(self) -> bool:
        """The attempt streamed any text at all (cheap: asked on every event)."""
        return bool(self._chunks)

    def reset(self) -> None:
        """A new attempt begins."""
        self._chunks.clear()
        self._hold = RawErrorHold()

    def take(self, event: AcpEvent) -> list[AcpEvent]:
        """The events to show now, in order, for ``event`` (none while a raw error's text is held)."""
        if isinstance(event, TextChunk) and event.text:
            self._chunks.append(event.text)
        return self._hold.take(event)

    def failed(self, error: BaseException, *, tool_ran: bool) -> tuple[str, list[AcpEvent]]:
        """The attempt failed with ``error``: (text to take back, events held to show after all).

        When nothing but the error's own words streamed (and no tool ran), they are no answer: what
        was held is dropped and what was shown is taken back, so the person reads the error once and
        a retry is not blocked by them. Otherwise the held text was an answer after all.
        """
        if not tool_ran and is_echo(self.text, error):
            self._hold.drop()
            return self.text, []
        return "", self._hold.release()


#: Copilot CLI's own status line: a whole chunk, "Info: ..." or "Error: ..." (continued on indented lines).
_RE_COPILOT_STATUS = re.compile(r"^(Info|Error): \S[^\n]*(?:\n {2,}\S[^\n]*)*\s*$")
_RE_COPILOT_RETRYING = re.compile(r"\bRetrying\.*\s*$", re.I)
# "with provider at http://host/v1": where the agent's model API is, no business of the person's.
_RE_URL = re.compile(r"\s*\b(?:at\s+)?[a-z][\w+.-]*://\S+?(?=[\s)]|\.?\s|\.?$)", re.I)
#: The notice a person reads while the agent retries a failed model call by itself.
AGENT_RETRYING = "The model provider failed a request; the agent is retrying it."


class ThreadFailure:
    """Watches one turn's events for the agent saying its thread failed, and keeps its text back."""

    def __init__(self) -> None:
        self._run_start: int | None = None  # where the text run streaming now began in the turn's text
        self._held: list[str] | None = None  # the text streamed since the agent said its thread failed
        self._start = 0  # the turn's text from here on is the failure's (it streamed before the status)
        self._status: list[str] = []  # Copilot's status lines kept back since the last answer text
        self._notice: Notice | None = None
        self._passing: str | None = None  # released text the session feeds back through observe()

    def take_notice(self) -> Notice | None:
        """A notice for the person that the last kept-back chunk stands for (the agent retrying)."""
        notice, self._notice = self._notice, None
        return notice

    def _copilot(self, event: AcpEvent) -> tuple[bool, str] | None:
        """Copilot's status lines: kept back. Answer text right after one (no other event between)
        shows it was the answer's start after all; answer text later means an "Error:" line was
        not the turn's end."""
        if not isinstance(event, TextChunk):
            self._status = []  # followed by something else: the agent's own line, dropped for good
            return None
        if not event.text:
            return None
        if self._passing is not None and event.text == self._passing:
            self._passing = None  # our own release, coming back through observe()
            return False, ""
        status = _RE_COPILOT_STATUS.match(event.text)
        if status is None:
            released, self._status = "".join(self._status), []
            self._held = None
            self._passing = released or None
            return (False, released) if released else None
        self._status.append(event.text)
        if status.group(1) == "Error":
            self._held = [event.text]
        elif _RE_COPILOT_RETRYING.search(event.text):
            self._notice = Notice(AGENT_RETRYING, key="agent-retry")
        return True, ""

    @property
    def failed(self) -> bool:
        """The agent said the turn's thread failed (and has not resumed it since)."""
        return self._held is not None

    def observe(self, event: AcpEvent, streamed: int, backend: str = "") -> tuple[bool, str]:
        """Look at one event; ``streamed`` is the length of the turn's text so far.

        Returns ``(True, "")`` when ``event`` is the failure's text (keep it back), else
        ``(False, released)``: ``released`` is text kept back needlessly (the thread runs again)
        that is part of the answer after all.
        """
        if backend == "copilot" and (copilot := self._copilot(event)) is not None:
            return copilot
        if isinstance(event, TextChunk):
            if self._held is not None:
                self._held.append(event.text)
                return True, ""
            if self._run_start is None:
                self._run_start = streamed
            return False, ""
        released = ""
        if isinstance(event, SessionInfo) and event.status == THREAD_SYSTEM_ERROR:
            if self._held is None:
                self._held = []
                # Should the text come before the status, the run that just streamed is the failure's.
                self._start = streamed if self._run_start is None else self._run_start
        elif isinstance(event, SessionInfo) and event.status and self._held is not None:
            released, self._held = "".join(self._held), None
        self._run_start = None
        return False, released

    def error(self, text: str, *, backend: str, advertised_models: Sequence[str]) -> AcpError | RefusalInfo:
        """What the failed turn stands for: the classified AcpError (``text`` is the turn's answer text,
        its partial output), or a RefusalInfo when the provider's words are a refusal."""
        said = "".join(self._held or ()).strip() or text[self._start:].strip()
        said = _RE_URL.sub("", said)
        raw = {"code": -32603, "message": said, "data": {"message": said, "threadStatus": THREAD_SYSTEM_ERROR}}
        exc = error_from_rpc(raw, backend=backend, advertised_models=advertised_models)
        if classify(exc).kind == "refusal":
            return refusal_from_error(said)  # declined, not failed
        exc.partial_output = text
        return exc
