"""A turn the agent failed without a JSON-RPC error: codex-acp 2.x's ``systemError`` thread status,
and Copilot CLI's status lines.

codex-acp 2.x (the TypeScript adapter over the Codex app server) answers a failed model call with
no error at all: it sends ``session_info_update`` with ``_meta.codex.threadStatus.type`` set to
``systemError``, streams the provider's text as an ``agent_message_chunk`` (the raw JSON body of a
400, "exceeded retry limit, last status: 429 Too Many Requests" for a 429) and ends the turn with
``end_turn``. That text is the error, never an answer: it is kept back from the turn's events and
the prompt raises the AcpError it stands for, classified by the same patterns as every other error.

Copilot CLI (backend ``copilot``, a known rule for its own text shape, never a guess on another
agent's text) writes its status as whole answer chunks: ``Info: Request failed due to a transient
API error. Retrying...`` while it retries a model call, ``Info: Operation cancelled by user`` after a
denial, and ``Error: 400 ...`` / ``Error: Failed to get response from the AI model; retried 5 times
... Last error: 429 ...`` / ``Error: Authentication failed with provider at <url> (HTTP 401).`` when
the call failed, then ``end_turn``. Those chunks are kept back; an ``Error:`` one is the turn's
failure unless answer text follows it. The provider's URL is never part of what a person reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.acp._dispatch import refusal_from_error
from core.acp.client import AcpError
from core.acp.types import THREAD_SYSTEM_ERROR, AcpEvent, Notice, RefusalInfo, SessionInfo, TextChunk
from core.failures import classify, error_from_rpc

__all__ = ["AGENT_RETRYING", "ThreadFailure"]

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
