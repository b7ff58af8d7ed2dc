"""The words an agent's failure is recognised by: one pattern per kind of failure (``core.failures``
reads each in its table of rules), and the words each pattern's matches must hold, so a text holding
none of them (most answers' first chunks) is known to name no failure without trying a pattern.
"""

from __future__ import annotations

import re

from core.redact import lowered

__all__ = [
    "RE_AUTH",
    "RE_CONNECTION_REFUSED",
    "RE_CONTEXT_OVERFLOW",
    "RE_KIRO_ENVELOPE",
    "RE_MALFORMED",
    "RE_MODEL_NOT_AVAILABLE",
    "RE_MODEL_TEMP_UNAVAILABLE",
    "RE_OVERLOADED",
    "RE_OVERSIZED",
    "RE_PROMPT_BUSY",
    "RE_RATE_LIMIT",
    "RE_REFUSAL",
    "RE_SERVER_ERROR",
    "RE_SESSION_LOST",
    "RE_STREAM_TIMEOUT",
    "RE_USAGE_LIMIT",
    "WORDS",
    "may_name_a_failure",
]

_I = re.IGNORECASE
# Not a class by itself: Kiro wraps many failures in it; classification reads what follows.
RE_KIRO_ENVELOPE = re.compile(r"encountered an error in the response stream:\s*", _I)
RE_PROMPT_BUSY = re.compile(r"\bprompt (?:is )?already in progress", _I)
# Only the agent's own "this session is unknown" wordings, said at the start of a line: "MCP tool not
# found in this session" is about a tool. -32002 (resource not found) counts too (``core.failures``).
RE_SESSION_LOST = re.compile(
    r"""(?:^|:\s+)(?:(?:session|conversation)(?: (?:with )?id)?(?: [`'"]?[\w.:-]+[`'"]?)?"""
    r""" (?:not found|does not exist|is unknown|no longer exists)|(?:unknown|no such) session"""
    r"""|no (?:conversation|session) found with session id|--resume requires a valid session id)\b""", _I | re.M)
RE_AUTH = re.compile(
    r"\bauthentication[ _](?:required|failed|error)|\bnot (?:logged|signed) in\b|\bplease (?:log|sign) in\b"
    r"|\bunauthori[sz]ed\b|\b(?:invalid|incorrect) (?:x-)?api[ -]?key|\bapi key (?:is )?(?:invalid|missing|expired)"
    r"|\b(?:status|code|error)[:\s]*401\b|\(401\)|\boauth token (?:has )?expired", _I)
RE_REFUSAL = re.compile(r"\busage polic(?:y|ies)\b|\bsafeguards flagged\b|anthropic\.com/legal/aup", _I)
RE_MODEL_NOT_AVAILABLE = re.compile(
    r"""\bthe model (?:(?P<q>[`'"])(?P<model>[^`'"\n]{1,80})(?P=q)|(?P<bare>[\w.:/-]+))"""
    r""" (?:is not available|does not exist|is not supported)|\bmodel[_ ]not[_ ]found\b""", _I)
RE_MODEL_TEMP_UNAVAILABLE = re.compile(
    r"\bmodel (?:[^.\n]{0,40} )?is (?:temporarily|currently) unavailable"
    r"|\bmodel[_ ]temporarily[_ ]unavailable|\bModelNotReadyException\b", _I)
RE_USAGE_LIMIT = re.compile(
    r"\busage limit\b|\busage_limit(?:_exceeded|_reached)?\b|\binsufficient_quota\b"
    r"|\bexceeded your current quota\b|\bcredit balance is too low\b", _I)
RE_CONTEXT_OVERFLOW = re.compile(
    r"\bcontext (?:limit|window|length) (?:exceeded|is full|reached)|\bexceeds? (?:the )?(?:model's )?"
    r"(?:maximum )?context (?:window|length|limit)|\bcontext_(?:length|window)_exceeded\b"
    r"|\bmaximum context length\b|\bprompt is too long\b", _I)
RE_OVERSIZED = re.compile(
    r"\binput is too long\b|\bcontent_length_exceeds_threshold\b|\binput content length exceeds\b"
    r"|\brequest[_ ](?:entity[_ ])?too[_ ]large\b|\bpayload too large\b|\blength limit exceeded\b"
    r"|\b(?:status|code|error)[:\s]*413\b|\(413\)", _I)
RE_MALFORMED = re.compile(
    r"\bimproperly[ -]formed request\b|\bmalformed (?:request|input|payload)\b"
    r"|\brequest (?:was|is) malformed\b", _I)
# A bare number never counts: "429" inside a request id or a port is not a status.
RE_RATE_LIMIT = re.compile(
    r"\brate[ _-]?limit|\bthrottl(?:ed|ing)\b|\bThrottlingException\b|\btoo many requests\b"
    r"|\bresource (?:has been |is )?exhausted\b|\bRESOURCE_EXHAUSTED\b"
    r"|\b(?:status|code|error)[:\s]*429\b|\(429\)|\b429 too many\b", _I)
RE_OVERLOADED = re.compile(r"(?<![a-z])overloaded(?![a-z])|\b(?:status|code|error)[:\s]*529\b|\(529\)", _I)
RE_STREAM_TIMEOUT = re.compile(
    r"\bstream timed out\b|\btimed out receiving the response\b|\bstream(?:ing)? timeout\b"
    r"|\bresponse_stream_disconnected\b|\bstream disconnected\b", _I)
RE_CONNECTION_REFUSED = re.compile(
    r"\bconnection refused\b|\bECONNREFUSED\b|\bECONNRESET\b|\bconnection reset\b|\bfailed to connect\b"
    r"|\berror sending request\b|\bhttp_connection_failed\b|\bresponse_stream_connection_failed\b"
    r"|\bsocket hang up\b|\bfetch failed\b", _I)
RE_SERVER_ERROR = re.compile(
    r"\binternal server error\b|\bbad gateway\b|\bservice unavailable\b|\bgateway time-?out\b"
    r"|\b(?:internal_)?server_error\b|\bInternalServerException\b|\bServiceUnavailableException\b"
    r"|\b(?:status|code|error)[:\s]*5\d\d\b|\(5\d\d\)", _I)

#: Words (lowercase) a text holds, in any case, wherever one of these patterns matches it: one of its
#: pattern's words stands in every text the pattern matches (``tests/test_failures.py`` checks that
#: against each pattern's parse). ``text_kind`` runs on every answer's first chunk, and most answers
#: name no failure: none of these words, no pattern tried (16 patterns cost a few microseconds per
#: character, 0.2 ms on a chunk of 115).
WORDS: dict[re.Pattern[str], tuple[str, ...]] = {
    RE_PROMPT_BUSY: ("already in progress",),
    RE_SESSION_LOST: ("session", "not found", "does not exist", "is unknown", "no longer exists"),
    RE_AUTH: ("authentication", "logged", "signed", "please ", "unauthori", "api", "401", "oauth token "),
    RE_REFUSAL: ("usage polic", "safeguards flagged", "anthropic.com/legal/aup"),
    RE_MODEL_NOT_AVAILABLE: ("model",),
    RE_MODEL_TEMP_UNAVAILABLE: ("unavailable", "modelnotreadyexception"),
    RE_USAGE_LIMIT: ("usage limit", "usage_limit", "insufficient_quota", "exceeded your current quota",
                      "credit balance is too low"),
    RE_CONTEXT_OVERFLOW: ("context", "prompt is too long"),
    RE_OVERSIZED: ("input is too long", "content_length_exceeds_threshold", "input content length exceeds",
                    "large", "length limit exceeded", "413"),
    RE_MALFORMED: ("formed request", "malformed"),
    RE_RATE_LIMIT: ("limit", "throttl", "too many requests", "exhausted", "429"),
    RE_OVERLOADED: ("overloaded", "529"),
    RE_STREAM_TIMEOUT: ("timed out", "timeout", "disconnected"),
    RE_CONNECTION_REFUSED: ("connection refused", "econnrefused", "econnreset", "connection reset",
                             "failed to connect", "error sending request", "http_connection_failed",
                             "response_stream_connection_failed", "socket hang up", "fetch failed"),
    RE_SERVER_ERROR: ("internal server error", "bad gateway", "service unavailable", "gateway time", "server_error",
                       "internalserverexception", "serviceunavailableexception", "5"),
}
#: Every word above, each once: a text with none of them names no failure by its words.
_ANY_WORD = tuple(sorted({word for words in WORDS.values() for word in words}))


def may_name_a_failure(text: str) -> bool:
    """False where no row's pattern can match ``text``: it holds none of their words (``WORDS``)."""
    lower = lowered(text)
    if lower is None:
        return True
    for word in _ANY_WORD:  # noqa: SIM110  (a loop: half the time of ``any()`` over a generator)
        if word in lower:
            return True
    return False
