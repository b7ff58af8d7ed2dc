"""A provider's raw error text -> a sentence a person may read (used by ``core.failures``).

Raw errors arrive wrapped: boilerplate ("Internal error: "), JSON bodies (sometimes cut off
mid-way), stack traces, Python tracebacks, Rust panics, terminal colours. ``unwrap`` keeps what the
provider SAID; ``person_text`` makes any sentence fit to show (commands described, secrets
redacted); ``cut`` shortens only after redacting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from core.redact import REDACTED, redact, shorten_request_ids

__all__ = ["cut", "flatten", "person_text", "strip_ansi", "unwrap"]

_I = re.IGNORECASE
_BOILERPLATE = re.compile(r"^\s*(?:internal error|error)\s*(?::\s*|$)", _I)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Where a trace starts, at the very start too (then nothing before it is a sentence).
_STACK = re.compile(
    r"(?:^|\n)\s*(?:location:|(?:stack )?backtrace\b|traceback\b|note: run with `?RUST_BACKTRACE)|\n\s+at\s+\S", _I)
_PY_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$", re.M)
_RUST_PANIC = re.compile(r"thread '[^'\n]*' panicked at (?:'(?P<old>[^\n]*)', \S+|\S+:\s*\n(?P<new>[^\n]*))")
_JSON_START = re.compile(r'\{\s*"')
# In a cut-off JSON body: the string fields a provider speaks in (the closing quote may be missing).
_JSON_CUT_FIELD = re.compile(r'"(message|type|code|status|reason|detail)"\s*:\s*"((?:[^"\\]|\\.)*)("?)')
# A "/word" or "!word" standing alone (not part of a path or URL) is some surface's command.
_COMMAND = re.compile(r"""(?<![\w/.:~!<-])([`'"]?)[/!]([A-Za-z][\w-]*)\1(?![\w/>])""")
# Claude Code's terminal-only advice; in a chat the message cannot be edited, only sent again.
_DOUBLE_ESC = re.compile(r"\bdouble[- ]press (?:esc|escape) to edit your last message\b", _I)


def strip_ansi(text: str) -> str:
    """Terminal colour codes out (agents colour their stderr)."""
    return _ANSI.sub("", text)


def flatten(value: Any, depth: int = 0) -> list[str]:
    """codex_error_info: variant tags (dict keys) and string values; an http status becomes "status N"."""
    if isinstance(value, str):
        return [value]
    out: list[str] = []
    if isinstance(value, Mapping) and depth < 4:
        for key, inner in value.items():
            out.append(str(key))
            if isinstance(inner, int) and not isinstance(inner, bool) and str(key).endswith("status_code"):
                out.append(f"status {inner}")
            else:
                out.extend(flatten(inner, depth + 1))
    return out


def _json_message(obj: Any) -> str:
    if not isinstance(obj, Mapping):
        return ""
    for key in ("error", "message", "detail", "details"):
        inner = obj.get(key)
        found = _json_message(inner) if isinstance(inner, Mapping) else inner
        if isinstance(found, str) and found.strip():
            return found
    return ""


def _json_fields(obj: Any) -> list[str]:
    """The provider's fields inside an embedded error body; other keys (urls, ids) are echoes."""
    out: list[str] = []
    if isinstance(obj, Mapping):
        for key in ("message", "type", "code", "status", "reason", "detail", "details", "error"):
            inner = obj.get(key)
            if isinstance(inner, str):
                out.append(inner)
            elif isinstance(inner, int) and not isinstance(inner, bool):
                out.append(f"{key} {inner}")
            elif isinstance(inner, Mapping):
                out.extend(_json_fields(inner))
    return out


def _last_python_line(text: str) -> str:
    """A Python traceback says what failed on its last unindented line; the frames are noise."""
    header = _PY_TRACEBACK.search(text)
    if header is None:
        return text
    lines = [ln for ln in text[header.end():].splitlines() if ln.strip() and not ln[:1].isspace()]
    return f"{text[:header.start()]}\n{lines[-1] if lines else ''}"


def _cut_json(tail: str, *, for_matching: bool) -> str:
    """A JSON body cut off mid-way: keep what the provider said in it, never the raw JSON."""
    fields = [(m.group(1), m.group(2), m.group(3)) for m in _JSON_CUT_FIELD.finditer(tail)]
    if for_matching:
        return " ".join(value for _key, value, _end in fields)
    said = [(value, end) for key, value, end in fields if key in ("message", "detail") and value.strip()]
    if not said:
        return ""
    value, closing_quote = said[-1]
    return value.strip() + ("" if closing_quote else "…")  # "…": the provider's sentence was cut too


def unwrap(text: str, *, for_matching: bool, envelope: re.Pattern[str] | None = None, depth: int = 0) -> str:
    """Strip boilerplate, Kiro's envelope and traces; replace an embedded JSON error body by its message."""
    text = _ANSI.sub("", envelope.sub("", text) if envelope else text).strip()
    text = _RUST_PANIC.sub(lambda m: m.group("old") or m.group("new") or "", _last_python_line(text))
    text = _STACK.split(text, maxsplit=1)[0]
    while (stripped := _BOILERPLATE.sub("", text, count=1)) != text:
        text = stripped
    start = match.start() if (match := _JSON_START.search(text)) else -1
    if start >= 0 and depth < 3:
        try:
            obj, end = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            obj, end = None, 0
            prefix, inner = text[:start].strip(), _cut_json(text[start:], for_matching=for_matching)
            text = " ".join(part for part in (prefix, inner) if part)
        if isinstance(obj, Mapping):
            prefix, rest = text[:start].strip(), text[start + end :].strip()
            inner = " ".join(_json_fields(obj)) if for_matching else _json_message(obj)
            inner = unwrap(inner, for_matching=for_matching, envelope=envelope, depth=depth + 1)
            text = " ".join(part for part in (prefix, inner, rest) if part)
    return " ".join(text.split())


def cut(text: str, limit: int) -> str:
    """Redact FIRST, then cut: a cut token no longer has the shape redaction recognises."""
    text = redact(text)
    if len(text) <= limit:
        return text
    marker = text.find(REDACTED, max(0, limit - len(REDACTED) + 1))
    limit = marker + len(REDACTED) if 0 <= marker < limit else limit  # never half a marker
    return text[:limit].rstrip() + "…"


def person_text(text: str) -> str:
    """Any agent-provided sentence a person is shown: commands described, ids short, secrets redacted.

    ``/word`` and ``!word`` are some surface's (or the agent's own terminal's) commands and do nothing
    in most chats, so they become "the agent's word command"; only ``/compact`` is understood by every
    surface and stays. Idempotent.
    """

    def command(match: re.Match[str]) -> str:
        word = match.group(2)
        return "/compact" if word.lower() == "compact" else f"the agent's {word} command"

    text = _DOUBLE_ESC.sub("rephrase your last message", _COMMAND.sub(command, text))
    return redact(shorten_request_ids(text))
