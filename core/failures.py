"""Classification and wording of every failure a turn can end with (spec: error-handling.md).

One table, ``_RULES``, maps each module-level ``_RE_*`` pattern to a kind, a retry verdict and a
prose builder. ``_is_transient_raw_error`` and ``_format_acp_error`` both read that one match, so
the wording a person sees and the retry verdict can never drift apart.

Prose rules: plain sentences, redacted, request ids short; no command except ``/compact`` (the
only one every surface understands); resets are described in words ("start a new conversation").
``person_text`` applies them to any other sentence from an agent (refusal explanations).
The raw text is read by ``core.provider_text``; an exception built by ``error_from_rpc`` carries
its verdict, so later callers agree with the retry ladder whatever they know.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.acp import client as c
from core.acp.client import AcpError
from core.acp.session_handle import AcpRequestTimeout, AcpRuntimeDead, AcpRuntimeError, AcpWorkspaceBindingError
from core.provider_text import cut, flatten, person_text, strip_ansi, unwrap

__all__ = [
    "INTERNAL_FAILURE",
    "Classification",
    "_format_acp_error",
    "_is_transient_raw_error",
    "classify",
    "echoes_error",
    "error_from_rpc",
    "is_session_lost",
    "login_command",
    "person_text",
]

_I = re.IGNORECASE
# Not a class by itself: Kiro wraps many failures in it; classification reads what follows.
_RE_KIRO_ENVELOPE = re.compile(r"encountered an error in the response stream:\s*", _I)
_RE_PROMPT_BUSY = re.compile(r"\bprompt (?:is )?already in progress", _I)
# Only the agent's own "this session is unknown" wordings, said at the start of a line: "MCP tool not
# found in this session" is about a tool. -32002 (resource not found) counts too, see _match.
_RE_SESSION_LOST = re.compile(
    r"""(?:^|:\s+)(?:(?:session|conversation)(?: (?:with )?id)?(?: [`'"]?[\w.:-]+[`'"]?)?"""
    r""" (?:not found|does not exist|is unknown|no longer exists)|(?:unknown|no such) session"""
    r"""|no (?:conversation|session) found with session id|--resume requires a valid session id)\b""", _I | re.M)
_RE_AUTH = re.compile(
    r"\bauthentication[ _](?:required|failed|error)|\bnot (?:logged|signed) in\b|\bplease (?:log|sign) in\b"
    r"|\bunauthori[sz]ed\b|\binvalid (?:x-)?api[ -]?key|\bapi key (?:is )?(?:invalid|missing|expired)"
    r"|\b(?:status|code|error)[:\s]*401\b|\(401\)|\boauth token (?:has )?expired", _I)
_RE_REFUSAL = re.compile(r"\busage polic(?:y|ies)\b|\bsafeguards flagged\b|anthropic\.com/legal/aup", _I)
_RE_MODEL_NOT_AVAILABLE = re.compile(
    r"""\bthe model (?:(?P<q>[`'"])(?P<model>[^`'"\n]{1,80})(?P=q)|(?P<bare>[\w.:/-]+))"""
    r""" (?:is not available|does not exist|is not supported)|\bmodel[_ ]not[_ ]found\b""", _I)
_RE_MODEL_TEMP_UNAVAILABLE = re.compile(
    r"\bmodel (?:[^.\n]{0,40} )?is (?:temporarily|currently) unavailable"
    r"|\bmodel[_ ]temporarily[_ ]unavailable|\bModelNotReadyException\b", _I)
_RE_USAGE_LIMIT = re.compile(
    r"\busage limit\b|\busage_limit(?:_exceeded|_reached)?\b|\binsufficient_quota\b"
    r"|\bexceeded your current quota\b|\bcredit balance is too low\b", _I)
_RE_CONTEXT_OVERFLOW = re.compile(
    r"\bcontext (?:limit|window|length) (?:exceeded|is full|reached)|\bexceeds? (?:the )?(?:model's )?"
    r"(?:maximum )?context (?:window|length|limit)|\bcontext_(?:length|window)_exceeded\b"
    r"|\bmaximum context length\b|\bprompt is too long\b", _I)
_RE_OVERSIZED = re.compile(
    r"\binput is too long\b|\bcontent_length_exceeds_threshold\b|\binput content length exceeds\b"
    r"|\brequest[_ ](?:entity[_ ])?too[_ ]large\b|\bpayload too large\b|\blength limit exceeded\b"
    r"|\b(?:status|code|error)[:\s]*413\b|\(413\)", _I)
_RE_MALFORMED = re.compile(
    r"\bimproperly[ -]formed request\b|\bmalformed (?:request|input|payload)\b"
    r"|\brequest (?:was|is) malformed\b", _I)
# A bare number never counts: "429" inside a request id or a port is not a status.
_RE_RATE_LIMIT = re.compile(
    r"\brate[ _-]?limit|\bthrottl(?:ed|ing)\b|\bThrottlingException\b|\btoo many requests\b"
    r"|\b(?:status|code|error)[:\s]*429\b|\(429\)|\b429 too many\b", _I)
_RE_OVERLOADED = re.compile(r"(?<![a-z])overloaded(?![a-z])|\b(?:status|code|error)[:\s]*529\b|\(529\)", _I)
_RE_STREAM_TIMEOUT = re.compile(
    r"\bstream timed out\b|\btimed out receiving the response\b|\bstream(?:ing)? timeout\b"
    r"|\bresponse_stream_disconnected\b|\bstream disconnected\b", _I)
_RE_CONNECTION_REFUSED = re.compile(
    r"\bconnection refused\b|\bECONNREFUSED\b|\bECONNRESET\b|\bconnection reset\b|\bfailed to connect\b"
    r"|\berror sending request\b|\bhttp_connection_failed\b|\bresponse_stream_connection_failed\b"
    r"|\bsocket hang up\b|\bfetch failed\b", _I)
_RE_SERVER_ERROR = re.compile(
    r"\binternal server error\b|\bbad gateway\b|\bservice unavailable\b|\bgateway time-?out\b"
    r"|\b(?:internal_)?server_error\b|\bInternalServerException\b|\bServiceUnavailableException\b"
    r"|\b(?:status|code|error)[:\s]*5\d\d\b|\(5\d\d\)", _I)

_PERIOD = re.compile(r"\b(monthly|daily|weekly|hourly)\b", _I)
_SUGGESTED_MODEL = re.compile(r"/model\s+([\w.:-]+)")
_PROVIDER = {"kiro": "Kiro", "claude": "Claude", "codex": "Codex"}
_RETRY = {"claude": "try your request again"}
_LOGIN_COMMAND = {"kiro": "kiro-cli login", "codex": "codex login"}
_BACKENDS = ("kiro", "claude", "codex")
_LOGIN_HOW = {
    "claude": "Set ANTHROPIC_API_KEY for the agent, or run claude on the machine where the relay runs "
    "and log in there.",
    "codex": "Set OPENAI_API_KEY for the agent, or run codex login on the machine where the relay runs.",
}


@dataclass(frozen=True, slots=True)
class Classification:
    """What one failure is: its ``kind``, the retry verdict, and the sentence a person sees."""

    kind: str
    transient: bool
    prose: str


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the matcher read from one raw error: only the provider's own fields."""

    code: int | None
    text: str
    sentence: str
    has_error_type: bool
    backend: str
    advertised: tuple[str, ...]


_Builder = Callable[[_Facts, "re.Match[str] | None"], str]
_Failure = Mapping[str, Any] | BaseException


@dataclass(frozen=True, slots=True)
class _Rule:
    """One row of the table. ``prose`` is a template ({who}, {retry}, {sentence}) or a builder."""

    pattern: re.Pattern[str] | None
    kind: str
    transient: bool
    prose: str | _Builder
    when: Callable[[_Facts, re.Match[str]], bool] | None = None

    def render(self, facts: _Facts, match: re.Match[str] | None) -> str:
        if callable(self.prose):
            return self.prose(facts, match)
        who, retry = _PROVIDER.get(facts.backend, "The model provider"), _retry(facts.backend)
        return self.prose.format(who=who, retry=retry, sentence=facts.sentence)


def _retry(backend: str) -> str:
    return _RETRY.get(backend, "please try again")


def _model_name(match: re.Match[str] | None) -> str:
    if match is None or match.re is not _RE_MODEL_NOT_AVAILABLE:
        return ""
    return (match.group("model") or match.group("bare") or "").strip()


def _advertised(facts: _Facts, match: re.Match[str]) -> bool:
    name = _model_name(match).casefold()
    return bool(name) and name in {m.casefold() for m in facts.advertised}


def _model_prose(model: str, available: Sequence[str]) -> str:
    named = f"The model '{model}'" if model else "The selected model"
    offer = f" (available: {', '.join(list(available)[:6])})" if available else ""
    return f"{named} is not available on this account. Choose another model{offer}, or upgrade your plan."


def _program(command: str) -> str:
    """The program's name: never a resolved path (it means nothing on another machine)."""
    return os.path.basename(command.strip()) if os.sep in command else (command.split() or [""])[0]


def _login_backend(backend: str, command: str) -> str:
    if backend in _BACKENDS:
        return backend
    name = _program(command).lower()
    return next((b for b in _BACKENDS if b in name), backend)


def login_command(backend: str, command: str = "") -> str:
    """What a person runs to sign the agent in (``kiro-cli login``), or "" when there is no such command.

    ``command`` is the agent's command (a resolved path is fine) or a login command already; the backend
    is read from it when ``backend`` is generic, because a caller may not know the backend yet.
    """
    return _LOGIN_COMMAND.get(_login_backend(backend, command), "")


def _auth_prose(backend: str, line: str, command: str) -> str:
    line = line.strip().rstrip(".")
    said = "" if not line or line.casefold() == "authentication required" else f'; it said: "{line}"'
    run = login_command(backend, command)
    how = f"Run {run} on the machine where the relay runs." if run else ""
    default = "Log the agent in on the machine where the relay runs."
    how = how or _LOGIN_HOW.get(_login_backend(backend, command), default)
    return f"The agent is not signed in{said}. {'' if run and run in line else how}".strip()


def _usage_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    which = f"{period.group(1).lower()} " if (period := _PERIOD.search(facts.text)) else ""
    return f"Your {which}usage limit has been reached. Wait for it to reset, choose another model or upgrade."


def _refusal_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    suggested = _SUGGESTED_MODEL.search(facts.text)
    such = f" such as {suggested.group(1)}" if suggested else ""
    return (
        "The model declined this message under the provider's usage policy. Rephrase it, start a new "
        f"conversation, or choose another model{such}."
    )


def _auth_rule_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    return _auth_prose(facts.backend, facts.sentence, _LOGIN_COMMAND.get(facts.backend, ""))


def _unknown_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    said = facts.sentence
    return f"The agent reported an error: {said}" if said else "The agent failed without giving a reason."


def _oversized_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    said = f'; it said: "{facts.sentence.rstrip(".")}"' if facts.sentence else ""
    return f"The message was too large for the model{said}. Send a shorter message, or split it up."


def _capacity_prose(facts: _Facts, m: re.Match[str] | None) -> str:
    return f"The model '{_model_name(m)}' has no capacity right now; {_retry(facts.backend)} shortly."


_SESSION_LOST = (
    "The agent no longer has this conversation (it may have been restarted or cleared). Start a new "
    "conversation; the agent will not remember the earlier messages."
)
_BUSY = "The agent is still working on an earlier message. Wait for it to finish, then send this one again."
_OVERFLOW = (
    "The conversation no longer fits in the model's context window. Use /compact to shrink it, or start "
    "a new conversation."
)
_MALFORMED = (
    "The model provider rejected the request as malformed, so sending it again would fail the same way. "
    "Use /compact to shrink and repair the conversation, or start a new conversation."
)
_AUTH_RULE = _Rule(_RE_AUTH, "auth", False, _auth_rule_prose)
_SESSION_LOST_RULE = _Rule(_RE_SESSION_LOST, "session_lost", False, _SESSION_LOST)
_UNKNOWN_RULE = _Rule(None, "unknown", False, _unknown_prose)
# First match wins, so the specific wordings come before the generic status classes.
_RULES: tuple[_Rule, ...] = (
    _Rule(_RE_PROMPT_BUSY, "prompt_busy", False, _BUSY),
    _SESSION_LOST_RULE,
    _AUTH_RULE,
    _Rule(_RE_REFUSAL, "refusal", False, _refusal_prose),
    # "The model 'X' is not available": capacity when X is advertised to us, else not entitled.
    _Rule(_RE_MODEL_NOT_AVAILABLE, "model_temporarily_unavailable", True, _capacity_prose, _advertised),
    _Rule(_RE_MODEL_NOT_AVAILABLE, "model_not_entitled", False,
          lambda f, m: _model_prose(_model_name(m), f.advertised)),
    _Rule(_RE_MODEL_TEMP_UNAVAILABLE, "model_temporarily_unavailable", True,
          "The selected model is temporarily unavailable; {retry} shortly."),
    _Rule(_RE_USAGE_LIMIT, "usage_limit", False, _usage_prose),
    _Rule(_RE_CONTEXT_OVERFLOW, "context_overflow", False, _OVERFLOW),
    _Rule(_RE_OVERSIZED, "oversized", False, _oversized_prose),
    _Rule(_RE_MALFORMED, "malformed", False, _MALFORMED),
    _Rule(_RE_RATE_LIMIT, "rate_limit", True, "{who} is rate-limiting requests right now; {retry} soon."),
    _Rule(_RE_OVERLOADED, "overloaded", True, "{who} is overloaded right now; {retry} in a moment."),
    _Rule(_RE_STREAM_TIMEOUT, "stream_timeout", True, "The response stream stalled and timed out; {retry}."),
    _Rule(_RE_CONNECTION_REFUSED, "connection_refused", True,
          "The agent could not connect to its model provider; {retry} in a moment."),
    _Rule(_RE_SERVER_ERROR, "server_error", True, "{who} had a server error; {retry} in a moment."),
)


def _facts(raw: Mapping[str, Any], backend: str, advertised: Sequence[str]) -> _Facts:
    code, message, data = raw.get("code"), raw.get("message"), raw.get("data")
    # Only these fields are the provider speaking; anything else in ``data`` may merely echo a pattern.
    # For the sentence shown, data is the specific part and ``message`` often mere boilerplate.
    spoken = [data.get("message"), data.get("details")] if isinstance(data, Mapping) else [data]
    spoken.append(message)
    fields = [f for f in spoken if isinstance(f, str)]
    if isinstance(data, Mapping):
        fields += [data[k] for k in ("errorKind", "errorType") if isinstance(data.get(k), str)]
        fields += flatten(data.get("codex_error_info"))
    sentences = (unwrap(f, for_matching=False, envelope=_RE_KIRO_ENVELOPE) for f in spoken if isinstance(f, str))
    sentence = cut(next((s for s in sentences if s), ""), 400)
    text = "\n".join(unwrap(f, for_matching=True, envelope=_RE_KIRO_ENVELOPE) for f in fields)
    has_error_type = isinstance(data, Mapping) and "errorType" in data
    code = code if isinstance(code, int) else None
    return _Facts(code, text, sentence, has_error_type, backend, tuple(advertised))


def _match(facts: _Facts) -> tuple[_Rule, re.Match[str] | None]:
    """The single matcher behind both the retry verdict and the wording."""
    if facts.code == -32002:  # ACP's "resource not found": on a session request, the session
        return _SESSION_LOST_RULE, None
    for rule in _RULES:
        match = rule.pattern.search(facts.text) if rule.pattern else None
        if match is not None and (rule.when is None or rule.when(facts, match)):
            return rule, match
    # -32000 is auth required, except on Kiro's KAS engine, which marks validation errors with errorType.
    if facts.code == -32000 and not facts.has_error_type:
        return _AUTH_RULE, None
    return _UNKNOWN_RULE, None


def _raw_verdict(raw: Mapping[str, Any], backend: str, advertised: Sequence[str]) -> Classification:
    facts = _facts(raw, backend, advertised)
    rule, match = _match(facts)
    return Classification(rule.kind, rule.transient, person_text(rule.render(facts, match)))


def _is_transient_raw_error(raw: Mapping[str, Any], *, backend: str = "generic",
                            advertised_models: Sequence[str] = ()) -> bool:
    """Retry verdict for a raw JSON-RPC error ``{"code", "message", "data"}``."""
    return _match(_facts(raw, backend, advertised_models))[0].transient


def _died(lead: str, exit_code: int | None, tail: str, transient: bool, backend: str) -> str:
    code = f" (exit code {exit_code})" if exit_code is not None else ""
    lines = [line.strip() for line in strip_ansi(tail).splitlines() if line.strip()]
    said = f' Its last output was: "{cut(lines[-1], 300)}".' if lines else ""
    retry = f" {_retry(backend).capitalize()}." if transient else ""
    return f"{lead}{code}.{said}{retry}"


def _tool_gate_prose(data: Any) -> str:
    data = data if isinstance(data, Mapping) else {}
    name, flag = data.get("agent") or "<name>", data.get("flag") or "-a, --trust-all-tools or --trust-tools"
    gate = f" is {data['tool_gate']!r}" if data.get("tool_gate") else " asks for approval or denies tools"
    return (
        f"This agent is started with {flag}, which lets its tool calls skip approval, but "
        f"agents.{name}.tool_gate{gate}. Remove the trust flag from the agent's command, or change "
        f"agents.{name}.tool_gate in the config."
    )


_SETUP_KINDS = frozenset({"agent_missing", "cwd_missing", "protocol_version"})


#: What a person reads when the relay itself failed; the traceback is in the log (written at the funnel).
INTERNAL_FAILURE = ("The relay hit a problem it did not expect, so this message was not answered; "
                    "its log has the details.")


def _setup_verdict(data: Mapping[str, Any]) -> Classification:
    """The agent could not even be started: a fact of this machine's set-up, never retried."""
    key = f"agents.{data.get('agent', '<name>')}"
    if data.get("kind") == "cwd_missing":
        return Classification("cwd_missing", False,
                              f"The agent's working folder does not exist; check {key}.cwd in the config.")
    if data.get("kind") == "protocol_version":
        return Classification("protocol_version", False,
                              f"The agent speaks version {data.get('version')} of the Agent Client Protocol, and "
                              f"this relay speaks version {data.get('supported')}; update the agent or the relay.")
    hint = str(data.get("hint") or "install it, or correct that setting")
    return Classification("agent_missing", False,
                          f"The agent command {data.get('command', '')!r} was not found on PATH ({key}.command). "
                          f"To fix it: {hint}.")


def _exception_verdict(exc: BaseException, backend: str, advertised: Sequence[str]) -> Classification:
    retry, transient = _retry(backend), bool(getattr(exc, "transient", False))
    if isinstance(exc, c.AcpPromptBusy):
        return _raw_verdict({"message": "Prompt already in progress"}, backend, advertised)
    if type(exc) is c.AcpError and isinstance(exc.data, dict) and exc.data.get("kind") in _SETUP_KINDS:
        return _setup_verdict(exc.data)
    if isinstance(exc, c.AcpError) and type(exc) is c.AcpError:  # built from a raw error: same table
        return _raw_verdict(exc.raw(), backend, advertised)
    if isinstance(exc, c.AcpAuthRequired):
        kind, prose = "auth", _auth_prose(backend, exc.agent_line, exc.command)
    elif isinstance(exc, c.AcpModelUnavailable):
        kind, prose = "model_not_entitled", _model_prose(exc.model, exc.available)
    elif isinstance(exc, c.AcpTimeoutError):
        kind, prose = "timeout", f"The agent timed out before finishing its answer; {retry}."
    elif isinstance(exc, c.AcpProcessDied):
        kind = "process_died"
        prose = _died("The agent stopped unexpectedly", exc.exit_code, exc.stderr_tail, transient, backend)
    elif isinstance(exc, c.AcpPermissionNeeded):
        tool = f" ({exc.tool_title})" if exc.tool_title else ""
        kind = "permission_needed"
        prose = f"The agent wanted to use a tool{tool} that needs approval, and nobody could be asked."
    elif isinstance(exc, c.AcpToolGateUnroutable):
        kind, prose = "tool_gate", _tool_gate_prose(exc.data)
    elif isinstance(exc, AcpRuntimeDead):
        kind = "runtime_dead"
        prose = _died("The agent process has ended", exc.exit_code, exc.stderr_tail, transient, backend)
    elif isinstance(exc, AcpRequestTimeout):
        budget = f"within {exc.budget_s:g} seconds" if exc.budget_s else "in time"
        kind, prose = "request_timeout", f"The agent did not answer {budget}; {retry}."
    elif isinstance(exc, AcpWorkspaceBindingError):
        kind, prose = "workspace_binding", "This agent works in another workspace folder, not this one."
    elif isinstance(exc, AcpRuntimeError):
        detail = f": {exc.message}" if exc.message else ""
        kind, prose = "runtime_error", f"The connection to the agent failed{detail}; {retry}."
    elif isinstance(exc, c.AcpError):  # a subclass this table does not know yet
        return _raw_verdict(exc.raw(), backend, advertised)
    else:  # our own bug, not the agent's: its text (paths, internals) is for the log, not a person
        kind, transient, prose = "unknown", False, INTERNAL_FAILURE
    return Classification(kind, transient, prose)


def echoes_error(text: str, error: BaseException) -> bool:
    """True when ``text`` only repeats the error's own words: claude-agent-acp and codex-acp stream the
    error as an ordinary chunk just before the JSON-RPC error, and a person should read it once."""
    said = " ".join(text.split())
    if not said:
        return False
    data = getattr(error, "data", None)
    raw = " ".join(f"{getattr(error, 'message', '') or error} {json.dumps(data) if data is not None else ''}".split())
    return said in raw or said in " ".join(str(data).split())


def classify(error: _Failure, *, backend: str = "generic",
             advertised_models: Sequence[str] = ()) -> Classification:
    """Classify a raw JSON-RPC error or an exception: kind, retry verdict and redacted prose.

    An exception built by :func:`error_from_rpc` carries the verdict it was built with (the backend
    and advertised models known then); that one is returned whatever the keyword arguments say, so
    the retry ladder and every later wording of the same error agree.
    """
    stored = getattr(error, "classification", None) if isinstance(error, BaseException) else None
    if isinstance(stored, Classification):
        return stored
    if isinstance(error, BaseException):
        verdict = _exception_verdict(error, backend, advertised_models)
        return Classification(verdict.kind, verdict.transient, person_text(verdict.prose))
    return _raw_verdict(error, backend, advertised_models)


def _format_acp_error(error: _Failure, *, backend: str = "generic",
                      advertised_models: Sequence[str] = ()) -> str:
    """Plain, redacted, actionable prose for a raw JSON-RPC error or any exception."""
    return classify(error, backend=backend, advertised_models=advertised_models).prose


def is_session_lost(exc: BaseException) -> bool:
    """True when the agent no longer knows the session (-32002, or its own "session not found")."""
    return isinstance(exc, AcpError) and classify(exc).kind == "session_lost"




def error_from_rpc(raw: Mapping[str, Any], *, backend: str = "generic",
                   advertised_models: Sequence[str] = ()) -> AcpError:
    """Build the exception a raw JSON-RPC error stands for, carrying the shared retry verdict.

    The Classification is computed once, here, and stored on the exception (``exc.classification``):
    later callers of :func:`classify` / :func:`_format_acp_error` may not know the advertised models.
    """
    facts = _facts(raw, backend, advertised_models)
    rule, match = _match(facts)
    code, message, data = facts.code, str(raw.get("message") or ""), raw.get("data")
    exc: AcpError
    if rule.kind == "auth":
        command = login_command(backend)
        exc = c.AcpAuthRequired(message, agent_line=facts.sentence, command=command, code=code, data=data)
    elif rule.kind == "prompt_busy":
        exc = c.AcpPromptBusy(message, code=code, data=data)
    elif rule.kind == "model_not_entitled":
        model, available = _model_name(match), tuple(advertised_models)
        exc = c.AcpModelUnavailable(message, model=model, available=available, code=code, data=data)
    else:
        exc = c.AcpError(message, code=code, data=data, transient=rule.transient)
    verdict = classify(exc, backend=backend, advertised_models=advertised_models)
    exc.classification = Classification(rule.kind, rule.transient, verdict.prose)
    return exc
