"""Streamed text that reads like a raw provider error is held back until the turn shows what it is.

claude-agent-acp streams a failed model call's text ("API Error: 400 Improperly formed request.",
"Invalid API key · Fix external API key") as an ordinary chunk just before the JSON-RPC error, and
codex-acp 0.16 the provider's JSON. Shown at once, the raw text would flash in the chat until the
error replaces it. So an attempt's first chunk is held when it reads like a failure (the same
``_RE_*`` patterns as every error, plus the raw shapes): more text, or the turn ending, releases it;
the attempt failing with that very error drops it (see :func:`is_echo`).
"""

from __future__ import annotations

import json
import re

from core.acp.types import AcpEvent, TextChunk, TurnEnded
from core.failures import classify, text_kind

__all__ = ["RawErrorHold", "echoes_error", "is_echo", "reads_like_raw_error"]

# claude-agent-acp's "API Error: ..." prefix, or a provider's JSON error body.
_RE_RAW = re.compile(r"""^\s*(?:(?:internal error:\s*)?api error\b|\{\s*"(?:type|error)"\s*:)""", re.I)


def _kind(text: str) -> str:
    return text_kind(text)


def reads_like_raw_error(text: str) -> bool:
    """True when ``text`` says nothing but that something failed."""
    said = text.strip()
    return bool(said) and (bool(_RE_RAW.match(said)) or _kind(said) != "unknown")


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
    return reads_like_raw_error(text) and _kind(text) == classify(error).kind


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
