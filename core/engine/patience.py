"""While an agent retries a failed model call by itself, the person is told so, not left in silence.

Copilot CLI says it is retrying ("Info: ... Retrying...", a ``Notice`` keyed ``agent-retry`` from the
session); Qwen Code, opencode and gemini-cli retry without a word, sometimes for minutes. One notice
line, corrected in place as time goes on ("still retrying, 2 minutes so far"), says what is known:
that the provider is failing and the agent retrying, or, for an agent known to retry in silence,
that nothing has come yet. The first answer text removes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from core.engine import wording

__all__ = ["AGENT_RETRY_KEY", "PATIENCE_TICK_S", "SILENT_AFTER_S", "Patience"]

#: The notice key the session's "the agent is retrying" notice (core.acp.error_text) carries.
AGENT_RETRY_KEY = "agent-retry"
#: How often the line is brought up to date.
PATIENCE_TICK_S = 15.0
#: An agent that retries in silence is presumed retrying after this long without a word.
SILENT_AFTER_S = 60.0


class Patience:
    """What the notice line says now (None: no line, "": remove it)."""

    def __init__(self, *, silent_retrier: Callable[[], bool], clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._silent_retrier = silent_retrier
        self._since: float | None = None  # when the agent said it was retrying
        self._shown = False
        self._answered = False

    def retrying(self) -> str:
        """The agent said it is retrying: the line to show."""
        if self._since is None:
            self._since = self._clock()
        return self._line(wording.agent_retrying(self._clock() - self._started))

    def answered(self) -> str | None:
        """Answer text arrived: the line goes (None when there was none)."""
        self._answered = True
        return self._line("") if self._shown else None

    def gave_up(self) -> str | None:
        """The turn failed: the line says the agent's own retries did not help (None: no line)."""
        return self._line(wording.AGENT_RETRY_GAVE_UP) if self._shown and not self._answered else None

    def tick(self) -> str | None:
        """The line brought up to date, or None when there is nothing to say."""
        if self._answered:
            return None
        elapsed = self._clock() - self._started
        if self._since is not None:
            return self._line(wording.agent_retrying(elapsed))
        if elapsed >= SILENT_AFTER_S and self._silent_retrier():
            return self._line(wording.agent_silent(elapsed))
        return None

    def _line(self, text: str) -> str:
        self._shown = bool(text)
        return text
