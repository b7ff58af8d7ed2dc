"""Scrub secrets and shorten request ids in any text before it leaves the core.

Two kinds of secret are known. By FORMAT: token shapes (``xoxb-...``, ``sk-ant-...``, a Telegram
bot token); each replacement keeps a short hint of what was there (``xoxb-[redacted]``) so a person
can still tell which credential is involved. By VALUE: the secrets the config names (each
``*_env`` variable's value, credential-looking agent ``env`` values), registered once when the
relay starts (``register_secrets``, see ``core.config.secret_values``); an agent running as the
relay's user can read them from ``/proc/<relay pid>/environ``, and their shapes are arbitrary.

Rules for values (one registry, here):

- A value shorter than ``MIN_SECRET_LENGTH`` (8) characters, once stripped, is not registered:
  replacing every "1234" or "pass" in answers would garble them, and so short a secret is guessed
  anyway. Nor is a trivial one: a plain number (``MAX_TOKENS=100000000`` names no secret) or a value
  of fewer than 4 different characters (``xxxxxxxx``). Values are registered stripped of surrounding
  whitespace.
- A value is replaced whole wherever it stands (keeping the hint its format gives, ``xoxb-[redacted]``,
  when it has a known token shape), and so is its START once it is at least half of it
  (and ``MIN_SECRET_LENGTH`` long): an answer cut off in the middle of a secret (stopped, failed)
  shows nothing that narrows it down much, while a token's public head (a Telegram bot's id, the
  first part of a Discord token) alone is left as it is.
- While an answer streams, any text at its end that could be the start of a secret (even one
  character) is held back (``unfinished_secret_at``) until the next chunk shows what it is.

Registrations are counted: each ``register_secrets`` call returns a handle that releases exactly
what it added (also as a context manager), so an engine, a dashboard and a test can each hold theirs;
``clear_secrets`` forgets everything (tests). Every function here is idempotent: running it twice
gives the same text as running it once.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from types import TracebackType

__all__ = [
    "FORMAT_RULES",
    "MASK",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SecretRegistration",
    "clear_secrets",
    "lowered",
    "mask_args",
    "redact",
    "register_secrets",
    "registered_secrets",
    "shorten_request_ids",
    "unfinished_secret_at",
]

REDACTED = "[redacted]"
#: What stands for a credential in an agent's arguments or environment shown to a person.
MASK = "****"
# An agent argument that names a credential: its value (next argument, or after "=") is masked.
_RE_SECRET_FLAG = re.compile(
    r"^--?[\w-]*(?:api[-_]?key|token|secret|password|passwd|pass|credentials?|auth)$", re.IGNORECASE)

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

# A full stop after it ends a sentence (it is no third dot of a longer dotted name).
_DISCORD_TOKEN = re.compile(
    r"(?<![\w.-])([A-Za-z0-9_-]{23,28})\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}(?![\w-])(?!\.[\w-])")

# Order matters: header values first, so "Authorization: Bearer x" becomes one marker, and the
# specific token shapes before the generic NAME=value rule, so their kind hint survives.
# Each rule's third item: words its pattern cannot match without (one of them; lowercase where the
# pattern ignores case; empty: none). Most text holds none, and a look for a word costs far less than
# a pattern tried at every word (``_by_format``).
FORMAT_RULES: tuple[tuple[re.Pattern[str], _Replacement, tuple[str, ...]], ...] = (
    (
        re.compile(
            r"""(?i)\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?!\[redacted)"""
            r"""(?:(?:bearer|basic|token|digest)\s+)?[^\s"',;]+"""
        ),
        rf"\1{REDACTED}",
        ("authorization",),
    ),
    (re.compile(r"""(?i)\b(x-api-key["']?\s*[:=]\s*["']?)(?!\[redacted)[^\s"',;]+"""), rf"\1{REDACTED}",
     ("x-api-key",)),
    (re.compile(r"(?i)\b(bearer\s+)(?!\[redacted)[A-Za-z0-9._~+/=-]{8,}"), rf"\1{REDACTED}", ("bearer",)),
    (re.compile(r"\b(sk-ant-|sk-proj-|sk-)[A-Za-z0-9_-]{16,}"), rf"\1{REDACTED}", ("sk-",)),
    (re.compile(r"\b(gh[pousr]_)[A-Za-z0-9]{20,}"), rf"\1{REDACTED}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (re.compile(r"\b(github_pat_)[A-Za-z0-9_]{20,}"), rf"\1{REDACTED}", ("github_pat_",)),
    (re.compile(r"\b(xox[abposre](?:\.xox[a-z])?-|xapp-)[A-Za-z0-9-]{6,}"), rf"\1{REDACTED}", ("xox", "xapp-")),
    (re.compile(r"\b(AKIA|ASIA|AIDA|AROA|AGPA|ANPA)[A-Z0-9]{16}\b"), rf"\1{REDACTED}",
     ("AKIA", "ASIA", "AIDA", "AROA", "AGPA", "ANPA")),
    (re.compile(r"\b(AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), rf"\1{REDACTED}", ("AIza",)),  # Google API keys
    # Discord bot tokens: <base64 bot id>.<timestamp>.<hmac>; JWTs share the shape but not the digits.
    (_DISCORD_TOKEN, _discord_token, ()),
    (
        re.compile(
            r"""(?i)\b((?:aws_)?secret_access_key|aws_session_token)(["']?\s*[:=]\s*["']?)"""
            r"""[A-Za-z0-9/+=]{16,}"""
        ),
        rf"\1\2{REDACTED}",
        ("secret_access_key", "aws_session_token"),
    ),
    # Telegram bot tokens: the numeric bot id is public, the 35-character part is the secret.
    (re.compile(r"(?<![0-9])([0-9]{6,12}):[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"), rf"\1:{REDACTED}", (":",)),
    # Credentials embedded in a URL: scheme://user:password@host
    (re.compile(r"(?<=://)([^/\s:@]+):(?!\[redacted)[^/\s@]+@"), rf"\1:{REDACTED}@", ("://",)),
    (
        re.compile(
            r"""(?i)\b([a-z0-9_]*(?:api_?key|_token|_secret|secret_key|access_key|_password))"""
            rf"""(["']?\s*[=:]\s*){_VALUE}"""
        ),
        _keep_name,
        ("apikey", "api_key", "_token", "_secret", "secret_key", "access_key", "_password"),
    ),
    # A quoted JSON/dict key that names a credential by itself: {"token": "...", "password": "..."}.
    (
        re.compile(
            r"""(?i)(["'](?:token|password|passwd|secret|api[_-]?key|apikey|access[_-]?token|client[_-]?secret)"""
            r"""["'])(\s*:\s*)("[^"\n]*"|'[^'\n]*')"""
        ),
        _keep_name,
        ("token", "passw", "secret", "api"),  # access_token, client_secret; password, passwd; api-key...
    ),
    # A bare assignment: password=..., token=... (not max_tokens=, not input_tokens=).
    (re.compile(rf"""(?i)(?<![\w-])(password|passwd|secret|token|apikey)(\s*=\s*){_VALUE}"""), _keep_name,
     ("passw", "secret", "token", "apikey")),
)

#: A rule that names no word is tried only where this pattern, a part of every text it matches, is found:
#: the Discord token's middle part between its two dots. Its literal first character lets ``re`` skip
#: to the dots, where the token's pattern tries a 23-character run at every word (14 us on 500 characters).
_GATES: dict[re.Pattern[str], re.Pattern[str]] = {_DISCORD_TOKEN: re.compile(r"\.[A-Za-z0-9_-]{6,7}\.")}

#: ``FORMAT_RULES`` as ``_by_format`` runs them: each rule's words, whether they are looked for in the
#: lowercased text (the pattern ignores case), and the gate of a rule with no word. Worked out once:
#: ``pattern.flags & re.IGNORECASE`` is an enum operation, slow enough to count on a short answer.
_RULES = tuple((pattern, replacement, needs, bool(pattern.flags & re.IGNORECASE), _GATES.get(pattern))
               for pattern, replacement, needs in FORMAT_RULES)

#: The characters a case-insensitive pattern matches to an ASCII letter although ``str.lower`` makes
#: them no such letter (U+0130 and U+0131 match "i", U+017F "s"): where one stands, lowercase words prove
#: nothing.
_UNLIKE_LOWER = ("\u0130", "\u0131", "\u017f")

#: How the secrets above begin. A streamed answer may end halfway through one, before the full
#: pattern can match: ``unfinished_secret_at`` finds such a tail so a streaming flush can hold it back.
_SECRET_START = re.compile(
    r"(?:(?<![\w-])(?:sk-|gh[pousr]_|github_pat_|xox[a-z]|xapp-|AKIA|ASIA|AIza)|(?i:bearer\s+)|(?<![0-9])[0-9]{6,12}:)"
    r"[^\s]*\Z"
)


def unfinished_secret_at(text: str) -> int | None:
    """Where a secret that may still be arriving begins at the end of ``text`` (None if none does):
    a token shape's start, or any start of a registered value (however short)."""
    tail = text[-256:]
    # A match runs to the end with at most one run of whitespace in it (``bearer\s+``): it starts in the
    # last two words, so the pattern (no literal to skip to) is tried from there, not at every character.
    # ``rsplit()`` splits on what ``\s`` matches; the lookbehinds still see the characters before ``pos``.
    words = tail.rsplit(None, 2)
    match = _SECRET_START.search(tail, len(words[0]) if len(words) == 3 else 0)
    by_format = len(text) - len(tail) + match.start() if match else None
    by_value = _REGISTRY.unfinished_at(text)
    if by_format is None or by_value is None:
        return by_value if by_format is None else by_format
    return min(by_format, by_value)


#: Shorter values are not registered (see the module docstring).
MIN_SECRET_LENGTH = 8


class _Registry:
    """The secret values to replace, counted per registration; a pattern of their heads finds them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        # Replaced in one assignment, so a reader on another thread sees one consistent state:
        # the values, longest first (of two overlapping values the longer wins); what replaces each
        # whole; a pattern of their heads (None: nothing registered).
        self._now: tuple[tuple[str, ...], dict[str, str], re.Pattern[str] | None] = ((), {}, None)

    def add(self, values: Iterable[str]) -> Counter[str]:
        added = Counter(v for v in (value.strip() for value in values) if _worth_registering(v))
        with self._lock:
            self._counts.update(added)
            self._rebuild()
        return added

    def remove(self, values: Counter[str]) -> None:
        with self._lock:
            self._counts.subtract(values)
            self._counts = +self._counts  # drop what reached zero
            self._rebuild()

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()
            self._rebuild()

    def values(self) -> frozenset[str]:
        return frozenset(self._now[0])

    def _rebuild(self) -> None:
        values = tuple(sorted(self._counts, key=len, reverse=True))
        known = self._now[1]
        whole = {v: known.get(v) or _whole_replacement(v) for v in values}
        heads = sorted({_head(v) for v in values}, key=len, reverse=True)
        self._now = (values, whole, re.compile("|".join(map(re.escape, heads))) if heads else None)

    def replace(self, text: str) -> str:
        """Every value, and every start of one at least its head long, as ``REDACTED``."""
        values, whole, heads = self._now
        if heads is None:
            return text
        out: list[str] = []
        pos = 0
        while (match := heads.search(text, pos)) is not None:
            start = match.start()
            end, marker = start, REDACTED
            for value in values:
                common = _common(text, start, value)
                if common >= _need(value) and start + common > end:
                    end, marker = start + common, whole[value] if common == len(value) else REDACTED
            if end == start:  # a head of one value, not followed by enough of any
                out.append(text[pos:start + 1])
                pos = start + 1
                continue
            out.append(text[pos:start] + marker)
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def unfinished_at(self, text: str) -> int | None:
        """The earliest index from which the rest of ``text`` is the start of a value (not all of it)."""
        found: int | None = None
        for value in self._now[0]:
            first = value[0]
            at = text.find(first, max(0, len(text) - len(value) + 1))
            while at != -1 and (found is None or at < found):
                if value.startswith(text[at:]):
                    found = at
                    break
                at = text.find(first, at + 1)
        return found


def _worth_registering(value: str) -> bool:
    """Long enough, not a plain number, not a run of a few characters, and no marker of ours."""
    return (len(value) >= MIN_SECRET_LENGTH and not value.isdigit() and len(set(value)) >= 4
            and REDACTED not in value and value not in REDACTED)


def _whole_replacement(value: str) -> str:
    """``REDACTED``, or the hint a known token shape keeps (``xoxb-[redacted]``) if it keeps under half."""
    hinted = _by_format(value)
    kept = len(hinted.replace(REDACTED, ""))
    return hinted if REDACTED in hinted and kept < _need(value) else REDACTED


def _need(value: str) -> int:
    """How much of ``value`` must stand in a text for it to be replaced: half, and the minimum."""
    return max(MIN_SECRET_LENGTH, (len(value) + 1) // 2)


def _head(value: str) -> str:
    return value[:_need(value)]


def _common(text: str, start: int, value: str) -> int:
    """How many characters of ``value`` stand in ``text`` from ``start`` on."""
    n = 0
    for a, b in zip(text[start:start + len(value)], value, strict=False):
        if a != b:
            break
        n += 1
    return n


_REGISTRY = _Registry()


class SecretRegistration:
    """What one ``register_secrets`` call added; ``release`` (or leaving the ``with``) removes it."""

    def __init__(self, added: Counter[str]) -> None:
        self._added: Counter[str] | None = added

    def release(self) -> None:
        """Stop replacing these values (unless another registration holds them too). Idempotent."""
        added, self._added = self._added, None
        if added:
            _REGISTRY.remove(added)

    def __enter__(self) -> SecretRegistration:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def register_secrets(values: Iterable[str]) -> SecretRegistration:
    """Replace each of ``values`` (stripped; shorter ones than ``MIN_SECRET_LENGTH`` are ignored)
    wherever :func:`redact` runs, until the returned registration is released."""
    return SecretRegistration(_REGISTRY.add(values))


def registered_secrets() -> frozenset[str]:
    """The values :func:`redact` replaces now."""
    return _REGISTRY.values()


def clear_secrets() -> None:
    """Forget every registered value (a test's clean slate)."""
    _REGISTRY.clear()


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
    ``token=`` assignments, and of JSON keys such as ``"token"``, ``"password"``, ``"api_key"``; and
    every registered secret value (see the module docstring), first, so none is left half-replaced.
    """
    return _by_format(_REGISTRY.replace(text))


def _by_format(text: str) -> str:
    lower = lowered(text)
    for pattern, replacement, needs, folds, gate in _RULES:
        # Skipped where it cannot match: none of its words is there, or its gate is not. A loop, not
        # ``any()`` over a generator: this look runs for every rule on every text shown.
        if needs:
            among = lower if folds else text
            if among is not None:
                for word in needs:
                    if word in among:
                        break
                else:
                    continue
        elif gate is not None and gate.search(text) is None:
            continue
        replaced = pattern.sub(replacement, text)
        if replaced != text:
            text, lower = replaced, lowered(replaced)
    return text


def lowered(text: str) -> str | None:
    """``text`` lowercased, to look for a case-insensitive pattern's (ASCII) words in; None where that
    could miss one (``_UNLIKE_LOWER``)."""
    if not text.isascii() and any(char in text for char in _UNLIKE_LOWER):
        return None
    return text.lower()


def _short(identifier: str) -> str:
    return identifier[:8] + "…"


def shorten_request_ids(text: str) -> str:
    """Shorten long request ids (after ``request_id:``/``requestId``, or ``req_...``) to 8 chars + "…".

    A person needs enough of the id to quote it to support, not a 36-character uuid in a chat line.
    """
    text = _REQUEST_ID_AFTER_KEY.sub(lambda m: m.group(1) + _short(m.group(2)), text)
    return _BARE_REQ_ID.sub(lambda m: _short(m.group(1)), text)


def mask_args(args: list[str]) -> list[str]:
    """Agent arguments with the value after a credential flag (``--api-key X``, ``--token=X``) masked."""
    out: list[str] = []
    for arg in args:
        flag, eq, _value = arg.partition("=")
        if out and _RE_SECRET_FLAG.match(out[-1]) and not arg.startswith("-"):
            out.append(MASK)
        elif eq and _RE_SECRET_FLAG.match(flag):
            out.append(f"{flag}={MASK}")
        else:
            out.append(arg)
    return out
