"""Logging set-up: every record is redacted before any handler writes it."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from core.private_files import private_file
from core.redact import redact

__all__ = ["RedactingFilter", "log_path", "setup_logging"]


class RedactingFilter(logging.Filter):
    """Replaces tokens and keys in the formatted message (and drops args it has folded in)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the record in place; it is always kept."""
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def log_path() -> Path:
    """The log file: ``$XDG_STATE_HOME/acp-relay/acp-relay.log`` (``~/.local/state`` by default)."""
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "acp-relay" / "acp-relay.log"


def setup_logging(level: int = logging.WARNING, *, to_file: bool = True) -> None:
    """stderr gets one line per record, never a traceback; tracebacks go to the log file."""
    root = logging.getLogger()
    root.setLevel(min(level, logging.INFO) if to_file else level)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    console = logging.StreamHandler()
    console.setLevel(level)
    console.setFormatter(_NoTraceback("%(levelname)s %(name)s: %(message)s"))
    console.addFilter(RedactingFilter())
    root.addHandler(console)
    if to_file:
        path = log_path()
        try:
            private_file(path)  # it may quote prompts and answers: the owner's alone
            file_handler = logging.FileHandler(path, encoding="utf-8")
        except OSError:
            return
        file_handler.setLevel(logging.INFO)
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        file_handler.addFilter(RedactingFilter())
        root.addHandler(file_handler)


class _NoTraceback(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text
        record.exc_info, record.exc_text = None, None
        try:
            return super().format(record)
        finally:
            record.exc_info, record.exc_text = saved
