"""Scrub secrets and shorten request ids in any text before it leaves the core.

Every replacement keeps a short hint of what was there (``xoxb-[redacted]``, ``sk-ant-[redacted]``)
so a person can still tell which credential is involved. Both functions are idempotent: running
them twice gives the same text as running them once.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

__all__ = [
    "REDACTED",
    "redact",
    "shorten_request_ids",
    "unfinished_secret_at",
]

REDACTED = "[redacted]"

_Replacement = str | Callable[[re.Match[str]], str]


def _keep_name(match: re.Match[str]) -> str:
    """Keep the assignment's name and separator, drop its value (quotes survive, for readability)."""
    value = match.group(3)
    if REDACTED in value:  # a more specific rule already ran and left its hint
        return match.group(0)
    quote = value[0] if value[:1] in {'"', "'"} else ""
    return f"{match.group(1)}{match.group(2)}{quote}{REDACTED}{quote}"


_VALUE = r"""("[^"\n]*"|'[^'\n]*'|[^\s"',;&}]+)"""


def _discord_token(match: re.Match[str]) -> str:
    """Three base64url parts whose first one decodes to digits (the bot's public id, kept as the hint)."""
    first = match.group(1)
    try:
        decoded = base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return match.group(0)
    return f"{first}.{REDACTED}" if decoded.isdigit() else match.group(0)

# Order matters: header values first, so "Authorization: Bearer x" becomes one marker, and the
# specific token shapes before the generic NAME=value rule, so their kind hint survives.
_RULES: tuple[tuple[re.Pattern[str], _Replacement], ...] = (
    (
        re.compile(
            r"""(?i)\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?!\[redacted)"""
            r"""(?:(?:bearer|basic|token|digest)\s+)?[^\s"',;]+"""
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"""(?i)\b(x-api-key["']?\s*[:=]\s*["']?)(?!\[redacted)[^\s"',;]+"""), rf"\1{REDACTED}"),
    (re.compile(r"(?i)\b(bearer\s+)(?!\[redacted)[A-Za-z0-9._~+/=-]{8,}"), rf"\1{REDACTED}"),
    (re.compile(r"\b(sk-ant-|sk-proj-|sk-)[A-Za-z0-9_-]{16,}"), rf"\1{REDACTED}"),
    (re.compile(r"\b(gh[pousr]_)[A-Za-z0-9]{20,}"), rf"\1{REDACTED}"),
    (re.compile(r"\b(github_pat_)[A-Za-z0-9_]{20,}"), rf"\1{REDACTED}"),
    (re.compile(r"\b(xox[abposre](?:\.xox[a-z])?-|xapp-)[A-Za-z0-9-]{6,}"), rf"\1{REDACTED}"),
    (re.compile(r"\b(AKIA|ASIA|AIDA|AROA|AGPA|ANPA)[A-Z0-9]{16}\b"), rf"\1{REDACTED}"),
    (re.compile(r"\b(AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), rf"\1{REDACTED}"),  # Google API keys
    # Discord bot tokens: <base64 bot id>.<timestamp>.<hmac>; JWTs share the shape but not the digits.
    (re.compile(r"(?<![\w.-])([A-Za-z0-9_-]{23,28})\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}(?![\w.-])"),
     _discord_token),
    (
        re.compile(
            r"""(?i)\b((?:aws_)?secret_access_key|aws_session_token)(["']?\s*[:=]\s*["']?)"""
            r"""[A-Za-z0-9/+=]{16,}"""
        ),
        rf"\1\2{REDACTED}",
    ),
    # Telegram bot tokens: the numeric bot id is public, the 35-character part is the secret.
    (re.compile(r"(?<![0-9])([0-9]{6,12}):[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"), rf"\1:{REDACTED}"),
    # Credentials embedded in a URL: scheme://user:password@host
    (re.compile(r"(?<=://)([^/\s:@]+):(?!\[redacted)[^/\s@]+@"), rf"\1:{REDACTED}@"),
    (
        re.compile(
            r"""(?i)\b([a-z0-9_]*(?:api_?key|_token|_secret|secret_key|access_key|_password))"""
            rf"""(["']?\s*[=:]\s*){_VALUE}"""
        ),
        _keep_name,
    ),
    # A quoted JSON/dict key that names a credential by itself: {"token": "...", "password": "..."}.
    (
        re.compile(
            r"""(?i)(["'](?:token|password|passwd|secret|api[_-]?key|apikey|access[_-]?token|client[_-]?secret)"""
            r"""["'])(\s*:\s*)("[^"\n]*"|'[^'\n]*')"""
        ),
        _keep_name,
    ),
    # A bare assignment: password=..., token=... (not max_tokens=, not input_tokens=).
    (re.compile(rf"""(?i)(?<![\w-])(password|passwd|secret|token|apikey)(\s*=\s*){_VALUE}"""), _keep_name),
)

#: How the secrets above begin. A streamed answer may end halfway through one, before the full
#: pattern can match: ``unfinished_secret_at`` finds such a tail so a streaming flush can hold it back.
_SECRET_START = re.compile(
    r"(?:(?<![\w-])(?:sk-|gh[pousr]_|github_pat_|xox[a-z]|xapp-|AKIA|ASIA|AIza)|(?i:bearer\s+)|(?<![0-9])[0-9]{6,12}:)"
    r"[^\s]*\Z"
)


def unfinished_secret_at(text: str) -> int | None:
    """Where a secret that may still be arriving begins at the end of ``text`` (None if none does)."""
    match = _SECRET_START.search(text[-256:])
    return len(text) - len(text[-256:]) + match.start() if match else None


_REQUEST_ID_AFTER_KEY = re.compile(
    r"""(?i)(\b(?:x-|aws_)?request[_ -]?id["']?\s*[:=]?\s*["']?)"""
    r"""([A-Za-z0-9][A-Za-z0-9_-]{11,})"""
)
_BARE_REQ_ID = re.compile(r"\b(req_[A-Za-z0-9]{8,})")


def redact(text: str) -> str:
    """Replace credentials in ``text`` with ``[redacted]``, keeping a short hint of their kind.

    Covers AWS access and secret keys, GitHub, Slack, Telegram and Discord tokens, Google API keys,
    ``Bearer`` and ``Authorization:`` header values, ``sk-``/``sk-ant-`` keys, URL passwords, the
    values of env-like ``*_API_KEY=`` / ``*_TOKEN=`` / ``*_SECRET=`` and bare ``password=`` /
    ``token=`` assignments, and of JSON keys such as ``"token"``, ``"password"``, ``"api_key"``.
    """
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def _short(identifier: str) -> str:
    return identifier[:8] + "…"


def shorten_request_ids(text: str) -> str:
    """Shorten long request ids (after ``request_id:``/``requestId``, or ``req_...``) to 8 chars + "…".

    A person needs enough of the id to quote it to support, not a 36-character uuid in a chat line.
    """
    text = _REQUEST_ID_AFTER_KEY.sub(lambda m: m.group(1) + _short(m.group(2)), text)
    return _BARE_REQ_ID.sub(lambda m: _short(m.group(1)), text)
