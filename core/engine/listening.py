"""Noting, for the call in progress, what a lower layer saw: a surface's HTTP layer notes the
platform's answer, and the surface reads it when the SDK could not (``AnswerUnreadable``).

A ``Listener`` is a context variable holding the note of whoever listens in the current task; the
HTTP layer (running in that same task) fills it in. Nothing is noted when nobody listens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

__all__ = ["Listener"]

N = TypeVar("N")


class Listener(Generic[N]):
    """``with listener.listen() as note:`` around a call; the layer below fills in ``listener.current()``."""

    def __init__(self, name: str, make: Callable[[], N]) -> None:
        self._var: ContextVar[N | None] = ContextVar(name, default=None)
        self._make = make

    @contextmanager
    def listen(self) -> Iterator[N]:
        """A fresh note for the calls made inside the block (in this task)."""
        note = self._make()
        token = self._var.set(note)
        try:
            yield note
        finally:
            self._var.reset(token)

    def current(self) -> N | None:
        """The note of whoever listens in this task, or None."""
        return self._var.get()
