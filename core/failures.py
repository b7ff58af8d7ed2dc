"""Classification and wording of every failure a turn can end with (spec: error-handling.md).

One table, ``_RULES``, says what every failure is: each row matches a raw error's words (a
``RE_*`` pattern of ``core.failure_patterns``) or the exception raised (``raised``), and gives its kind, its retry
verdict and its prose. ``_is_transient_raw_error`` and ``_format_acp_error`` (the spec's names, used
here only) both read that one match, so wording and retry verdict never drift apart. The public
face is ``core.describing.describe``: any exception -> prose, verdict and stable code. The
families come from the leaf ``core.errors``: nothing here imports ``core.acp`` (which imports this).

Prose rules: plain sentences, redacted, request ids short; no command except ``/compact`` (the
only one every surface understands); resets are described in words ("start a new conversation").
``person_text`` applies them to any other sentence from an agent (refusal explanations).
The raw text is read by ``core.provider_text``; an exception built by ``error_from_rpc`` carries
its verdict, so later callers agree with the retry ladder whatever they know.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import (
    AcpAuthRequired,
    AcpError,
    AcpModelUnavailable,
    AcpPermissionNeeded,
    AcpProcessDied,
    AcpPromptBusy,
    AcpRequestTimeout,
    AcpRuntimeDead,
    AcpRuntimeError,
    AcpTimeoutError,
    AcpToolGateUnroutable,
    AcpWorkspaceBindingError,
)
from core.failure_patterns import (
    RE_AUTH,
    RE_CONNECTION_REFUSED,
    RE_CONTEXT_OVERFLOW,
    RE_KIRO_ENVELOPE,
    RE_MALFORMED,
    RE_MODEL_NOT_AVAILABLE,
    RE_MODEL_TEMP_UNAVAILABLE,
    RE_OVERLOADED,
    RE_OVERSIZED,
    RE_PROMPT_BUSY,
    RE_RATE_LIMIT,
    RE_REFUSAL,
    RE_SERVER_ERROR,
    RE_SESSION_LOST,
    RE_STREAM_TIMEOUT,
    RE_USAGE_LIMIT,
    may_name_a_failure,
)
from core.gate_text import suggests_reset as gate_suggests_reset
from core.gate_text import tool_gate_prose
from core.provider_text import cut, flatten, person_text, strip_ansi, unwrap
from core.signin import auth_prose, login_command

__all__ = [
    "AGENTS_THAT_RETRY",
    "INTERNAL_FAILURE",
    "Classification",
    "classify",
    "error_from_rpc",
    "is_session_lost",
    "login_command",
    "person_text",
    "suggests_reset",
    "text_kind",
]

#: Backends whose agent retries a failed model call by itself before it fails the turn (Copilot CLI
#: five times, gemini-cli about ten, opencode and Qwen Code for minutes, Qwen without a word).
AGENTS_THAT_RETRY = frozenset({"copilot", "gemini", "opencode", "qwen"})
_HTTP_STATUSES = (400, 599)  # a JSON-RPC code in this range is an HTTP status (gemini-cli)
_PERIOD = re.compile(r"\b(monthly|daily|weekly|hourly)\b", re.IGNORECASE)
_SUGGESTED_MODEL = re.compile(r"/model\s+([\w.:-]+)")
_PROVIDER = {"kiro": "Kiro", "claude": "Claude", "codex": "Codex"}
_RETRY = {"claude": "try your request again"}


@dataclass(frozen=True, slots=True)
class Classification:
    """What one failure is: its ``kind``, the retry verdict, and the sentence a person sees."""

    kind: str
    transient: bool
    prose: str


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the matcher read from one failure: the provider's own fields, and the exception if any."""

    code: int | None
    text: str
    sentence: str
    has_error_type: bool
    backend: str
    advertised: tuple[str, ...]
    error: BaseException | None = None
    data: Any = None


_Builder = Callable[[_Facts, "re.Match[str] | None"], str]
_Failure = Mapping[str, Any] | BaseException


@dataclass(frozen=True, slots=True)
class _Rule:
    """One row: it matches a raw error whose words match ``pattern``, or an exception that is one of
    ``raised``; ``when``, if given, must agree. ``transient`` is a raw error's verdict (an exception
    carries its own). ``prose`` is a template ({who}, {retry}, {sentence}, {agent}) or a builder.
    """

    pattern: re.Pattern[str] | None
    kind: str
    transient: bool
    prose: str | _Builder
    when: Callable[[_Facts, re.Match[str] | None], bool] | None = None
    raised: type[BaseException] | None = None

    def render(self, facts: _Facts, match: re.Match[str] | None) -> str:
        if callable(self.prose):
            return self.prose(facts, match)
        who, retry = _PROVIDER.get(facts.backend, "The model provider"), _retry(facts.backend)
        agent = facts.data.get("agent") if isinstance(facts.data, Mapping) else None
        return self.prose.format(who=who, retry=retry, sentence=facts.sentence, agent=agent or "<name>")


def _retry(backend: str) -> str:
    return _RETRY.get(backend, "please try again")


def _model_name(match: re.Match[str] | None) -> str:
    if match is None or match.re is not RE_MODEL_NOT_AVAILABLE:
        return ""
    return (match.group("model") or match.group("bare") or "").strip()


def _advertised(facts: _Facts, match: re.Match[str] | None) -> bool:
    name = _model_name(match).casefold()
    return bool(name) and name in {m.casefold() for m in facts.advertised}


def _model_prose(model: str, available: Sequence[str]) -> str:
    named = f"The model '{model}'" if model else "The selected model"
    offer = f" (available: {', '.join(list(available)[:6])})" if available else ""
    return f"{named} is not available on this account. Choose another model{offer}, or upgrade your plan."


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
    if isinstance(error := facts.error, AcpAuthRequired):
        return auth_prose(facts.backend, error.agent_line, error.command)
    return auth_prose(facts.backend, facts.sentence, login_command(facts.backend))


def _not_entitled_prose(facts: _Facts, m: re.Match[str] | None) -> str:
    if isinstance(error := facts.error, AcpModelUnavailable):
        return _model_prose(error.model, error.available)
    return _model_prose(_model_name(m), facts.advertised)


def _unknown_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    said = facts.sentence
    return f"The agent reported an error: {said}" if said else "The agent failed without giving a reason."


def _oversized_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    said = f'; it said: "{facts.sentence.rstrip(".")}"' if facts.sentence else ""
    return f"The message was too large for the model{said}. Send a shorter message, or split it up."


def _capacity_prose(facts: _Facts, m: re.Match[str] | None) -> str:
    return f"The model '{_model_name(m)}' has no capacity right now; {_retry(facts.backend)} shortly."


def _died(lead: str) -> _Builder:
    """The process ended: its exit code and its last stderr line, and "try again" when it may help."""

    def prose(facts: _Facts, _m: re.Match[str] | None) -> str:
        error = facts.error
        died = error if isinstance(error, AcpProcessDied | AcpRuntimeDead) else None
        exit_code, tail = (died.exit_code, died.stderr_tail) if died else (None, "")
        code = f" (exit code {exit_code})" if exit_code is not None else ""
        lines = [line.strip() for line in strip_ansi(tail).splitlines() if line.strip()]
        said = f' Its last output was: "{cut(lines[-1], 300)}".' if lines else ""
        retry = f" {_retry(facts.backend).capitalize()}." if died and died.transient else ""
        return f"{lead}{code}.{said}{retry}"

    return prose


def _permission_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    title = facts.error.tool_title if isinstance(facts.error, AcpPermissionNeeded) else ""
    tool = f" ({title})" if title else ""
    return f"The agent wanted to use a tool{tool} that needs approval, and nobody could be asked."


def _tool_gate_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    return tool_gate_prose(facts.data if isinstance(facts.data, Mapping) else {})


def _timeout_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    error = facts.error
    streamed = isinstance(error, AcpError) and bool((error.partial_output or "").strip())
    if facts.backend in AGENTS_THAT_RETRY and not streamed:
        # Qwen Code retries a 429 or a 5xx for minutes in silence; nothing else keeps such an agent quiet.
        return ("The agent got no answer from its model provider in time. It retries failed model calls "
                "by itself, as it does while the provider is rate-limiting or overloaded; "
                f"{_retry(facts.backend)} in a few minutes.")
    return f"The agent timed out before finishing its answer; {_retry(facts.backend)}."


def _request_timeout_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    budget_s = facts.error.budget_s if isinstance(facts.error, AcpRequestTimeout) else 0.0
    budget = f"within {budget_s:g} seconds" if budget_s else "in time"
    return f"The agent did not answer {budget}; {_retry(facts.backend)}."


def _runtime_error_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    message = facts.error.message if isinstance(facts.error, AcpRuntimeError) else ""
    detail = f": {message}" if message else ""
    return f"The connection to the agent failed{detail}; {_retry(facts.backend)}."


def _setup(kind: str) -> Callable[[_Facts, re.Match[str] | None], bool]:
    """The agent could not even be started (a plain AcpError whose ``data`` says why): never retried."""

    def when(facts: _Facts, _m: re.Match[str] | None) -> bool:
        data = facts.data
        return type(facts.error) is AcpError and isinstance(data, Mapping) and data.get("kind") == kind

    return when


def _agent_missing_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    hint = str(facts.data.get("hint") or "install it, or correct that setting")
    return (f"The agent command {facts.data.get('command', '')!r} was not found on PATH "
            f"(agents.{facts.data.get('agent', '<name>')}.command). To fix it: {hint}.")


def _protocol_prose(facts: _Facts, _m: re.Match[str] | None) -> str:
    return (f"The agent speaks version {facts.data.get('version')} of the Agent Client Protocol, and this "
            f"relay speaks version {facts.data.get('supported')}; update the agent or the relay.")


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
#: What a person reads when the relay itself failed; the traceback is in the log (written at the funnel).
INTERNAL_FAILURE = ("The relay hit a problem it did not expect, so this message was not answered; "
                    "its log has the details.")
_AUTH_RULE = _Rule(RE_AUTH, "auth", False, _auth_rule_prose, raised=AcpAuthRequired)
_SESSION_LOST_RULE = _Rule(RE_SESSION_LOST, "session_lost", False, _SESSION_LOST)
_UNKNOWN_RULE = _Rule(None, "unknown", False, _unknown_prose)
# Our own bug, not the agent's: its text (paths, internals) is for the log, not a person.
_INTERNAL_RULE = _Rule(None, "unknown", False, INTERNAL_FAILURE)
# An exception is matched by its type first; a raw error (or a plain AcpError, which only carries
# one) by its words, where the first match wins, so the specific wordings come before the generic
# status classes. A subclass's row comes before its base's.
_RULES: tuple[_Rule, ...] = (
    _Rule(RE_PROMPT_BUSY, "prompt_busy", False, _BUSY, raised=AcpPromptBusy),
    _SESSION_LOST_RULE,
    _AUTH_RULE,
    _Rule(RE_REFUSAL, "refusal", False, _refusal_prose),
    # "The model 'X' is not available": capacity when X is advertised to us, else not entitled.
    _Rule(RE_MODEL_NOT_AVAILABLE, "model_temporarily_unavailable", True, _capacity_prose, _advertised),
    _Rule(RE_MODEL_NOT_AVAILABLE, "model_not_entitled", False, _not_entitled_prose, raised=AcpModelUnavailable),
    _Rule(RE_MODEL_TEMP_UNAVAILABLE, "model_temporarily_unavailable", True,
          "The selected model is temporarily unavailable; {retry} shortly."),
    _Rule(RE_USAGE_LIMIT, "usage_limit", False, _usage_prose),
    _Rule(RE_CONTEXT_OVERFLOW, "context_overflow", False, _OVERFLOW),
    _Rule(RE_OVERSIZED, "oversized", False, _oversized_prose),
    _Rule(RE_MALFORMED, "malformed", False, _MALFORMED),
    _Rule(RE_RATE_LIMIT, "rate_limit", True, "{who} is rate-limiting requests right now; {retry} soon."),
    _Rule(RE_OVERLOADED, "overloaded", True, "{who} is overloaded right now; {retry} in a moment."),
    _Rule(RE_STREAM_TIMEOUT, "stream_timeout", True, "The response stream stalled and timed out; {retry}."),
    _Rule(RE_CONNECTION_REFUSED, "connection_refused", True,
          "The agent could not connect to its model provider; {retry} in a moment."),
    _Rule(RE_SERVER_ERROR, "server_error", True, "{who} had a server error; {retry} in a moment."),
    # Only an exception reaches these rows: its fields, never its text, make the prose.
    _Rule(None, "agent_missing", False, _agent_missing_prose, _setup("agent_missing"), AcpError),
    _Rule(None, "cwd_missing", False, "The agent's working folder does not exist; check agents.{agent}.cwd in "
          "the config.", _setup("cwd_missing"), AcpError),
    _Rule(None, "protocol_version", False, _protocol_prose, _setup("protocol_version"), AcpError),
    _Rule(None, "timeout", True, _timeout_prose, raised=AcpTimeoutError),
    _Rule(None, "process_died", True, _died("The agent stopped unexpectedly"), raised=AcpProcessDied),
    _Rule(None, "permission_needed", False, _permission_prose, raised=AcpPermissionNeeded),
    _Rule(None, "tool_gate", False, _tool_gate_prose, raised=AcpToolGateUnroutable),
    _Rule(None, "runtime_dead", True, _died("The agent process has ended"), raised=AcpRuntimeDead),
    _Rule(None, "request_timeout", True, _request_timeout_prose, raised=AcpRequestTimeout),
    _Rule(None, "workspace_binding", False, "This agent works in another workspace folder, not this one.",
          raised=AcpWorkspaceBindingError),
    _Rule(None, "runtime_error", True, _runtime_error_prose, raised=AcpRuntimeError),
)


def _facts(error: _Failure, backend: str, advertised: Sequence[str]) -> _Facts:
    exc = error if isinstance(error, BaseException) else None
    raw = error.raw() if isinstance(error, AcpError) else {} if isinstance(error, BaseException) else error
    code, message, data = raw.get("code"), raw.get("message"), raw.get("data")
    # Only these fields are the provider speaking; anything else in ``data`` may merely echo a pattern.
    # For the sentence shown, data is the specific part and ``message`` often mere boilerplate.
    spoken = [data.get("message"), data.get("details")] if isinstance(data, Mapping) else [data]
    spoken.append(message)
    fields = [f for f in spoken if isinstance(f, str)]
    if isinstance(data, Mapping):
        fields += [data[k] for k in ("errorKind", "errorType") if isinstance(data.get(k), str)]
        fields += flatten(data.get("codex_error_info"))
    sentences = (unwrap(f, for_matching=False, envelope=RE_KIRO_ENVELOPE) for f in spoken if isinstance(f, str))
    sentence = cut(next((s for s in sentences if s), ""), 400)
    text = "\n".join(unwrap(f, for_matching=True, envelope=RE_KIRO_ENVELOPE) for f in fields)
    if isinstance(code, int) and _HTTP_STATUSES[0] <= code <= _HTTP_STATUSES[1]:
        # gemini-cli's convention: the provider's HTTP status as the JSON-RPC code (JSON-RPC's own
        # codes are negative). Read as the words "status N", so the same rows decide.
        text += f"\nstatus {code}"
    has_error_type = isinstance(data, Mapping) and "errorType" in data
    code = code if isinstance(code, int) else None
    return _Facts(code, text, sentence, has_error_type, backend, tuple(advertised), exc, data)


def _match(facts: _Facts) -> tuple[_Rule, re.Match[str] | None]:
    """The single matcher behind both the retry verdict and the wording."""
    if (error := facts.error) is not None:
        for rule in _RULES:
            if rule.raised and isinstance(error, rule.raised) and (rule.when is None or rule.when(facts, None)):
                return rule, None
        if not isinstance(error, AcpError):
            return _INTERNAL_RULE, None
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


def _verdict(facts: _Facts) -> tuple[Classification, re.Match[str] | None]:
    rule, match = _match(facts)
    error = facts.error
    # An exception carries its own verdict (one built from a raw error carries its row's).
    transient = bool(error.transient) if isinstance(error, AcpError | AcpRuntimeError) else rule.transient
    return Classification(rule.kind, transient, person_text(rule.render(facts, match))), match


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
    return _verdict(_facts(error, backend, advertised_models))[0]


def text_kind(text: str, *, backend: str = "generic") -> str:
    """The kind of failure a bare sentence from an agent names (``unknown`` for none), by the same
    ``_RE_*`` rows; cheap enough for every streamed first chunk (no prose is built)."""
    matched = unwrap(text, for_matching=True, envelope=RE_KIRO_ENVELOPE)
    if not may_name_a_failure(matched):
        return _UNKNOWN_RULE.kind  # what ``_match`` finds where no row's pattern matches (no code, no error)
    return _match(_Facts(None, matched, "", False, backend, (), None, None))[0].kind


def _is_transient_raw_error(error: _Failure, *, backend: str = "generic",
                            advertised_models: Sequence[str] = ()) -> bool:
    """The retry verdict the retry ladder reads, for a raw JSON-RPC error ``{"code", "message", "data"}``
    or an exception (one built from a raw error carries that error's verdict)."""
    return classify(error, backend=backend, advertised_models=advertised_models).transient


def _format_acp_error(error: _Failure, *, backend: str = "generic",
                      advertised_models: Sequence[str] = ()) -> str:
    """Plain, redacted, actionable prose for a raw JSON-RPC error or any exception."""
    return classify(error, backend=backend, advertised_models=advertised_models).prose


#: The kinds whose prose tells the person to start a new conversation.
_RESETTING = frozenset({"session_lost", "context_overflow", "malformed"})


def suggests_reset(error: _Failure, kind: str) -> bool:
    """True when the prose for ``error`` (of ``kind``, as :func:`classify` found it) tells the person to
    start a new conversation: a surface then adds its own way of doing that (``ErrorProse.reset``)."""
    if kind == "tool_gate":
        data = _facts(error, "generic", ()).data
        return gate_suggests_reset(data if isinstance(data, Mapping) else {})
    return kind in _RESETTING


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
    verdict, match = _verdict(facts)
    code, message, data = facts.code, str(raw.get("message") or ""), raw.get("data")
    exc: AcpError
    if verdict.kind == "auth":
        command = login_command(backend)
        exc = AcpAuthRequired(message, agent_line=facts.sentence, command=command, rpc_code=code, data=data)
    elif verdict.kind == "prompt_busy":
        exc = AcpPromptBusy(message, rpc_code=code, data=data)
    elif verdict.kind == "model_not_entitled":
        model, available = _model_name(match), tuple(advertised_models)
        exc = AcpModelUnavailable(message, model=model, available=available, rpc_code=code, data=data)
    else:
        exc = AcpError(message, rpc_code=code, data=data, transient=verdict.transient)
    exc.classification = verdict
    return exc
