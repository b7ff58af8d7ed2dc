"""Scrub secrets and shorten request ids in any text before it leaves the core.

Every replacement keeps a short hint of what was there (``xoxb-[redacted]``, ``sk-ant-[redacted]``)
so a person can still tell which credential is involved. Both functions are idempotent: running
them twice gives the same text as running them once.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["REDACTED", "redact", "shorten_request_ids"]

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
)

_REQUEST_ID_AFTER_KEY = re.compile(
    r"""(?i)(\b(?:x-|aws_)?request[_ -]?id["']?\s*[:=]?\s*["']?)"""
    r"""([A-Za-z0-9][A-Za-z0-9_-]{11,})"""
)
_BARE_REQ_ID = re.compile(r"\b(req_[A-Za-z0-9]{8,})")


def redact(text: str) -> str:
    """Replace credentials in ``text`` with ``[redacted]``, keeping a short hint of their kind.

    Covers AWS access and secret keys, GitHub, Slack and Telegram tokens, ``Bearer`` and
    ``Authorization:`` header values, ``sk-``/``sk-ant-`` keys, URL passwords and the values of
    env-like ``*_API_KEY=`` / ``*_TOKEN=`` / ``*_SECRET=`` assignments.
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
