"""core.failures: one table decides kind, retry verdict and wording for every backend error.

Wordings come from docs/acp-facts.md (Kiro, claude-agent-acp 0.23.1) and from the real recordings
copied verbatim into tests/fixtures/captures/.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core import failure_patterns, failures
from core.acp.client import (
    AcpAuthRequired,
    AcpError,
    AcpModelUnavailable,
    AcpPermissionNeeded,
    AcpProcessDied,
    AcpPromptBusy,
    AcpTimeoutError,
    AcpToolGateUnroutable,
)
from core.acp.runtime import AcpWorkspaceBindingError
from core.acp.session_handle import AcpRequestTimeout, AcpRuntimeDead, AcpRuntimeError
from core.failures import (
    _format_acp_error,
    _is_transient_raw_error,
    classify,
    error_from_rpc,
    is_session_lost,
    login_command,
    person_text,
)
from core.retry import Attempt, RetryPolicy, with_retries

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
ENVELOPE = "Encountered an error in the response stream: "
RETRY_HINT = {"kiro": "please try again", "generic": "please try again", "claude": "try your request again"}


def kiro(text: str) -> dict[str, Any]:
    """Kiro's shape: -32603 with the sentence as a string ``data``."""
    return {"code": -32603, "message": "Internal error", "data": text}


@dataclass(frozen=True)
class Case:
    id: str
    raw: dict[str, Any]
    backend: str
    kind: str
    transient: bool
    says: tuple[str, ...] = ()
    advertised: tuple[str, ...] = ()


NOT_AVAILABLE = "The model 'claude-opus-4.5' is not available. Please use '/model' to select another model."
CASES = [
    # Kiro, docs/acp-facts.md
    Case(
        "kiro-malformed",
        kiro(f"{ENVELOPE}Improperly formed request. (request_id: aa4beeae-214c-45f6-b1f5-04c8448eb026)"),
        "kiro",
        "malformed",
        False,
        ("malformed", "/compact", "start a new conversation"),
    ),
    Case(
        "kiro-model-not-entitled",
        kiro(NOT_AVAILABLE),
        "kiro",
        "model_not_entitled",
        False,
        ("'claude-opus-4.5'", "Choose another model", "upgrade your plan"),
        ("auto", "claude-sonnet-4"),
    ),
    Case(
        "kiro-model-advertised-is-capacity",
        kiro(NOT_AVAILABLE),
        "kiro",
        "model_temporarily_unavailable",
        True,
        ("claude-opus-4.5",),
        ("auto", "claude-opus-4.5"),
    ),
    Case(
        "kiro-model-temporarily-unavailable",
        kiro("The model you've selected is temporarily unavailable. Please switch models or try again."),
        "kiro",
        "model_temporarily_unavailable",
        True,
    ),
    Case(
        "kiro-prompt-busy",
        kiro("Prompt already in progress"),
        "kiro",
        "prompt_busy",
        False,
        ("still working",),
    ),
    Case(
        "kiro-stream-timeout",
        kiro(f"{ENVELOPE}The stream timed out receiving the response after 2000ms"),
        "kiro",
        "stream_timeout",
        True,
        ("timed out",),
    ),
    Case("kiro-throttling", kiro("ThrottlingException"), "kiro", "rate_limit", True, ("Kiro",)),
    Case(
        "kiro-monthly-limit",
        kiro("The monthly usage limit has been reached"),
        "kiro",
        "usage_limit",
        False,
        ("monthly usage limit", "choose another model"),
    ),
    Case(
        "kiro-daily-limit",
        kiro("You've reached your daily usage limit"),
        "kiro",
        "usage_limit",
        False,
        ("daily usage limit",),
    ),
    Case(
        "kiro-context-limit",
        kiro("Context limit exceeded unexpectedly. Please start a new session to continue."),
        "kiro",
        "context_overflow",
        False,
        ("/compact", "start a new conversation"),
    ),
    Case("kiro-bare-32603", {"code": -32603, "message": "Internal error"}, "kiro", "unknown", False),
    Case(
        "kiro-kas-validation-is-not-auth",
        {"code": -32000, "message": "Invalid request", "data": {"errorType": "ValidationException"}},
        "kiro",
        "unknown",
        False,
        ("Invalid request",),
    ),
    Case(
        "kiro-kas-validation-malformed",
        {
            "code": -32000,
            "message": "Validation error",
            "data": {"errorType": "ValidationException", "message": "Improperly formed request."},
        },
        "kiro",
        "malformed",
        False,
    ),
    Case(
        "kiro-input-too-long",
        kiro(f'{ENVELOPE}{{"message":"Input is too long.","reason":"CONTENT_LENGTH_EXCEEDS_THRESHOLD"}}'),
        "kiro",
        "oversized",
        False,
    ),
    # claude-agent-acp 0.23.1 (@zed-industries), docs/acp-facts.md
    Case(
        "claude-0.23-401-in-message",
        {"code": -32603, "message": "Internal error: Invalid API key · Please run /login"},
        "claude",
        "auth",
        False,
        ("not signed in", "ANTHROPIC_API_KEY", "Invalid API key"),
    ),
    Case(
        "claude-0.23-400-json-in-message",
        {
            "code": -32603,
            "message": 'Internal error: API Error: 400 {"type":"error","error":'
            '{"type":"invalid_request_error",'
            '"message":"Improperly formed request."},"request_id":"req_011CUabcdefghijklmnop"}',
        },
        "claude",
        "malformed",
        False,
    ),
    Case(
        "claude-0.23-400-prompt-too-long",
        {
            "code": -32603,
            "message": 'Internal error: API Error: 400 {"type":"error","error":'
            '{"type":"invalid_request_error",'
            '"message":"prompt is too long: 210000 tokens > 200000 maximum"}}',
        },
        "claude",
        "context_overflow",
        False,
    ),
    Case(
        "claude-0.23-429-json-in-message",
        {
            "code": -32603,
            "message": 'Internal error: API Error: 429 {"type":"error","error":{"type":"rate_limit_error",'
            '"message":"This request would exceed the rate limit for your organization"}}',
        },
        "claude",
        "rate_limit",
        True,
    ),
    Case(
        "claude-0.23-usage-policy-refusal",
        {
            "code": -32603,
            "message": "Internal error: API Error: Claude Code is unable to respond to this request, which "
            "appears to violate our Usage Policy (https://www.anthropic.com/legal/aup). Please double press "
            "esc to edit your last message or start a new session for Claude Code to assist with a different "
            "task. If you are seeing this refusal repeatedly, try running /model claude-sonnet-4-20250514 to "
            "switch "
            "models.",
        },
        "claude",
        "refusal",
        False,
        ("declined", "choose another model such as claude-sonnet-4-20250514"),
    ),
    # the facts table (claude 0.101.0 / codex 0.16), same wordings the captures hold
    Case(
        "codex-429-object-info",
        {
            "code": -32603,
            "message": "Internal error",
            "data": {
                "message": "exceeded retry limit, last status: 429 Too Many Requests",
                "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 429}},
            },
        },
        "codex",
        "rate_limit",
        True,
        ("Codex",),
    ),
    Case(
        "claude-529-overloaded",
        {
            "code": -32603,
            "message": "Internal error: API Error: 529 Overloaded",
            "data": {"errorKind": "server_error"},
        },
        "claude",
        "overloaded",
        True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_documented_wording_is_classified(case: Case) -> None:
    got = classify(case.raw, backend=case.backend, advertised_models=case.advertised)
    assert (got.kind, got.transient) == (case.kind, case.transient)
    for phrase in case.says:
        assert phrase in got.prose
    assert (RETRY_HINT.get(case.backend, "please try again") in got.prose) == case.transient
    assert "Internal error" not in got.prose and "{" not in got.prose


async def ladder_attempts(error: BaseException) -> int:
    """How many times the real retry ladder tries an attempt that fails with ``error`` every time."""
    tries: list[Attempt] = []

    async def attempt(state: Attempt) -> None:
        tries.append(state)
        state.reached_agent = True
        raise error

    async def no_wait(_delay: float) -> None:
        return None

    with pytest.raises(type(error)):
        await with_retries(attempt, policy=RetryPolicy(attempts=3), sleep=no_wait, rng=random.Random(1))
    return len(tries)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_the_ladder_retries_exactly_the_wordings_written_down_as_transient(case: Case) -> None:
    # The expectation is the table's hand-written ``transient``; the verdict is the one function
    # the ladder reads, for the raw error and for the exception the runtime builds from it.
    opts: dict[str, Any] = {"backend": case.backend, "advertised_models": case.advertised}
    assert _is_transient_raw_error(case.raw, **opts) is case.transient
    exc = error_from_rpc(case.raw, **opts)
    assert _is_transient_raw_error(exc) is case.transient
    assert await ladder_attempts(exc) == (3 if case.transient else 1)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_exception_built_from_rpc_reads_the_same(case: Case) -> None:
    opts: dict[str, Any] = {"backend": case.backend, "advertised_models": case.advertised}
    exc = error_from_rpc(case.raw, **opts)
    assert isinstance(exc, AcpError)
    assert exc.transient is case.transient
    assert _format_acp_error(exc, **opts) == _format_acp_error(case.raw, **opts)
    assert classify(exc, **opts).kind == case.kind


def _string_data_cases() -> list[Case]:
    return [c for c in CASES if isinstance(c.raw.get("data"), str)]


@pytest.mark.parametrize("case", _string_data_cases(), ids=[c.id for c in _string_data_cases()])
@pytest.mark.parametrize("key", ["message", "details"])
def test_object_data_reads_like_string_data(case: Case, key: str) -> None:
    raw = {"code": -32603, "message": "Internal error", "data": {key: case.raw["data"]}}
    got = classify(raw, backend=case.backend, advertised_models=case.advertised)
    assert (got.kind, got.transient) == (case.kind, case.transient)


@pytest.mark.parametrize("case", _string_data_cases(), ids=[c.id for c in _string_data_cases()])
def test_kiro_envelope_is_transparent(case: Case) -> None:
    raw = kiro(ENVELOPE + case.raw["data"].removeprefix(ENVELOPE))
    plain = kiro(case.raw["data"].removeprefix(ENVELOPE))
    opts: dict[str, Any] = {"backend": case.backend, "advertised_models": case.advertised}
    assert classify(raw, **opts) == classify(plain, **opts)


def _prose_data_cases() -> list[Case]:
    return [c for c in _string_data_cases() if "{" not in c.raw["data"]]  # JSON keys are case-sensitive


@pytest.mark.parametrize("case", _prose_data_cases(), ids=[c.id for c in _prose_data_cases()])
@pytest.mark.parametrize("change", [str.upper, str.lower], ids=["upper", "lower"])
def test_casing_does_not_change_the_class(case: Case, change: Any) -> None:
    raw = kiro(change(case.raw["data"]))
    got = classify(raw, backend=case.backend, advertised_models=case.advertised)
    assert (got.kind, got.transient) == (case.kind, case.transient)


def test_envelope_alone_is_not_a_class() -> None:
    got = classify(kiro(ENVELOPE + "Something nobody has seen before."), backend="kiro")
    assert (got.kind, got.transient) == ("unknown", False)
    assert got.prose == "The agent reported an error: Something nobody has seen before."


@pytest.mark.parametrize(
    "request_id",
    [
        "aa4beeae-214c-45f6-b1f5-04c8448eb026",
        "0262ee83-c5fc-48ea-b3ba-9387ac55849f",
        "req_011CUabcdefghijklmn",
        "",
    ],
)
def test_request_ids_do_not_change_the_class(request_id: str) -> None:
    suffix = f" (request_id: {request_id})" if request_id else ""
    got = classify(kiro(f"{ENVELOPE}Improperly formed request.{suffix}"), backend="kiro")
    assert (got.kind, got.transient) == ("malformed", False)


def test_unknown_error_shows_the_provider_sentence_with_a_short_request_id() -> None:
    got = classify(kiro(f"{ENVELOPE}Tool spec rejected. (request_id: aa4beeae-214c-45f6-b1f5-04c8448eb026)"))
    assert got.prose == "The agent reported an error: Tool spec rejected. (request_id: aa4beeae…)"


def test_unknown_json_error_shows_only_the_provider_message() -> None:
    raw = {
        "code": -32603,
        "message": 'Internal error: API Error: 400 {"type":"error","error":'
        '{"type":"invalid_request_error",'
        '"message":"messages.1.content: tool_use ids must be unique"}}',
    }
    got = classify(raw, backend="claude")
    assert got == failures.Classification(
        "unknown",
        False,
        "The agent reported an error: API Error: 400 messages.1.content: tool_use ids must be unique",
    )


def test_a_backtrace_in_the_message_is_cut_off() -> None:
    text = (
        "Kiro is having trouble responding right now:\n   0: Failed to send the request: An unknown error "
        'occurred: ValidationException\n   5: Error { code: "ValidationException", message: "Improperly '
        'formed request.", aws_request_id: "aa4beeae-214c-45f6-b1f5-04c8448eb026" }\n\nLocation:\n'
        "   crates/chat-cli/src/cli/chat/mod.rs:1467\n\n   BACKTRACE\n   6: chat_cli::cli::chat::ChatSession"
    )
    assert classify(kiro(text), backend="kiro").kind == "malformed"
    unknown = classify(kiro(text.replace("Improperly formed request.", "Bad tool spec.")), backend="kiro")
    assert unknown.kind == "unknown"
    assert "Bad tool spec." in unknown.prose and "aa4beeae…" in unknown.prose
    assert "crates/" not in unknown.prose and "BACKTRACE" not in unknown.prose
    node = "Error: boom\n    at Object.<anonymous> (/srv/app.js:1:1)\n    at Module._compile (node:internal)"
    assert classify(kiro(node)).prose == "The agent reported an error: boom"


def test_oversized_shows_the_provider_sentence_verbatim() -> None:
    # The provider's sentence is still quoted verbatim; the prose around it gives the kind a fixed
    # marker ("too large") and says what to do, which the bare sentence alone did not.
    got = classify(kiro(f"{ENVELOPE}Input is too long."), backend="kiro")
    assert (got.kind, got.prose) == (
        "oversized",
        'The message was too large for the model; it said: "Input is too long". '
        "Send a shorter message, or split it up.",
    )


def test_codex_fallback_metadata_warning_is_not_a_model_failure() -> None:
    # codex-acp streams this chunk before every error in the captures; it names a model and "not found".
    text = "Model metadata for `gpt-mock` not found. Defaulting to fallback metadata; this can degrade."
    assert classify(kiro(text), backend="codex").kind == "unknown"


# -- the recordings -------------------------------------------------------------------------------

CAPTURED = {
    ("claude-new-0.101.0-node20.jsonl", 2): ("auth", False),
    # session/load of an id the agent does not have: a lost session (was "unknown", so the relay
    # showed the raw wording instead of starting a new conversation).
    ("claude-new-0.101.0-node20.jsonl", 3): ("session_lost", False),
    ("claude-new-mock-400.jsonl", 2): ("malformed", False),
    ("claude-new-mock-401.jsonl", 2): ("auth", False),
    ("claude-new-mock-429.jsonl", 2): ("rate_limit", True),
    ("claude-new-mock-529.jsonl", 2): ("overloaded", True),
    ("claude-zed-0.23.1.jsonl", 2): ("auth", False),
    ("claude-zed-0.23.1.jsonl", 3): ("session_lost", False),  # -32002 Resource not found, same reason
    ("codex-zed-0.16.0.jsonl", 1): ("auth", False),
    ("codex-zed-0.16.0.jsonl", 2): ("auth", False),
    ("codex-zed-0.16.0.jsonl", 3): ("auth", False),
    ("codex-zed-mock-400.jsonl", 2): ("malformed", False),
    ("codex-zed-mock-401.jsonl", 2): ("auth", False),
    ("codex-zed-mock-429.jsonl", 2): ("rate_limit", True),
    # Recorded by the peer tier (codex-acp 2.6's failed model calls carry no JSON-RPC error at all).
    ("claude-zed-mock-429-retried.jsonl", 2): ("rate_limit", True),
    ("claude-zed-mock-refusal.jsonl", 2): ("refusal", False),
    ("codex-new-mock-401.jsonl", 3): ("auth", False),
    ("gemini-mock-400.jsonl", 2): ("malformed", False),
    # Issue 18's agents, recorded by the peer tier. gemini-cli's code is the HTTP status.
    ("gemini-mock-429.jsonl", 2): ("rate_limit", True),  # {"code": 429, "message": "Resource has been exhausted..."}
    ("gemini-mock-503.jsonl", 2): ("overloaded", True),  # its words say overloaded, its code 503
    ("opencode-mock-400.jsonl", 2): ("malformed", False),
    ("opencode-mock-401.jsonl", 2): ("auth", False),
    ("opencode-mock-429.jsonl", 2): ("rate_limit", True),
    ("qwen-mock-400.jsonl", 3): ("malformed", False),
    ("qwen-mock-401.jsonl", 3): ("auth", False),  # data.details "401 Incorrect API key provided: ..."
    ("auggie-0.36.0.jsonl", 1): ("auth", False),  # session/new: "Authentication required: Auggie does not..."
    ("claudecode-mock-400.jsonl", 2): ("malformed", False),  # claude-code-acp 0.16.2, like claude-agent-acp 0.2x
    ("claudecode-mock-401.jsonl", 2): ("auth", False),
    ("claudecode-mock-429-retried.jsonl", 2): ("rate_limit", True),  # it answers each retry with the 429 again
    ("claudecode-mock-429-retried.jsonl", 3): ("rate_limit", True),
    ("claudecode-mock-429-retried.jsonl", 4): ("rate_limit", True),
    ("claudecode-mock-529.jsonl", 2): ("overloaded", True),
}


def _captured_errors() -> list[tuple[str, int, dict[str, Any]]]:
    found = []
    for path in sorted(CAPTURES.glob("*.jsonl")):
        for line in path.read_text().splitlines()[1:]:
            record = json.loads(line)
            frame = record.get("data")
            if record.get("dir") == "agent->client" and isinstance(frame, dict) and "error" in frame:
                found.append((path.name, frame["id"], frame["error"]))
    return found


def test_every_captured_error_has_an_expectation() -> None:
    assert {(name, rid) for name, rid, _ in _captured_errors()} == set(CAPTURED)


@pytest.mark.parametrize(("name", "rid", "error"), _captured_errors(), ids=lambda v: str(v)[:30])
def test_captured_errors_are_classified(name: str, rid: int, error: dict[str, Any]) -> None:
    backend = name.split("-")[0]
    got = classify(error, backend=backend)
    assert (got.kind, got.transient) == CAPTURED[(name, rid)]
    assert (RETRY_HINT.get(backend, "please try again") in got.prose) == got.transient
    exc = error_from_rpc(error, backend=backend)
    assert isinstance(exc, AcpAuthRequired) == (got.kind == "auth")
    assert exc.transient is got.transient
    assert exc.raw() == {"code": error["code"], "message": error["message"], "data": error.get("data")}


@pytest.mark.parametrize(("code", "kind", "transient"), [
    (429, "rate_limit", True), (503, "server_error", True), (500, "server_error", True),
    (529, "overloaded", True), (401, "auth", False), (413, "oversized", False),
])
def test_an_http_status_used_as_the_json_rpc_code_is_read_as_that_status(code: int, kind: str,
                                                                        transient: bool) -> None:
    """gemini-cli puts the provider's HTTP status in the JSON-RPC ``code`` and a bare sentence in
    ``message``: the status decides when the words do not."""
    got = classify({"code": code, "message": "Something went wrong."}, backend="gemini")
    assert (got.kind, got.transient) == (kind, transient)
    assert _is_transient_raw_error({"code": code, "message": "Something went wrong."}) is transient


def test_a_json_rpc_code_outside_the_http_range_is_no_status() -> None:
    for code in (-32603, 42, 1429, 99):
        assert classify({"code": code, "message": "Something went wrong."}).kind == "unknown"


def test_gemini_429_is_a_retried_rate_limit_not_an_unknown_error() -> None:
    got = classify({"code": 429, "message": "Resource has been exhausted (e.g. check quota)."}, backend="gemini")
    assert (got.kind, got.transient) == ("rate_limit", True)
    assert "reported an error" not in got.prose


def test_captured_401_names_how_to_log_in_per_backend() -> None:
    claude = classify({"code": -32000, "message": "Authentication required"}, backend="claude").prose
    codex = classify({"code": -32000, "message": "Authentication required"}, backend="codex").prose
    kiro_ = classify({"code": -32000, "message": "Authentication required"}, backend="kiro").prose
    assert "ANTHROPIC_API_KEY" in claude and "codex login" in codex and "kiro-cli login" in kiro_


# -- every pattern in the table ---------------------------------------------------------------------

# Each sample's kind, and which kinds are transient, are written down here by hand: the table in
# core.failures is what is under test, so no expectation is read from it.
PATTERN_SAMPLES: dict[str, list[tuple[str, tuple[str, ...], str]]] = {
    "RE_PROMPT_BUSY": [("Prompt already in progress", (), "prompt_busy")],
    "RE_SESSION_LOST": [
        ("Session not found", (), "session_lost"),
        ("Session 0c1e-22 not found", (), "session_lost"),
        ("Unknown session: 0c1e-22", (), "session_lost"),
        ("Error: No conversation found with session ID: 0c1e-22", (), "session_lost"),
    ],
    "RE_AUTH": [("You are not logged in, please log in with kiro-cli login", (), "auth"), ("status 401", (), "auth"),
                 # OpenAI's wording, through qwen-code's data.details
                 ("401 Incorrect API key provided: test-key. You can find your API key at "
                  "https://platform.openai.com/account/api-keys.", (), "auth"),
                 # Copilot CLI's own, in its answer text
                 ("Authentication failed with provider at http://127.0.0.1:9/v1 (HTTP 401).", (), "auth")],
    "RE_REFUSAL": [("appears to violate our Usage Policy", (), "refusal")],
    "RE_MODEL_NOT_AVAILABLE": [
        (NOT_AVAILABLE, (), "model_not_entitled"),
        (NOT_AVAILABLE, ("claude-opus-4.5",), "model_temporarily_unavailable"),  # advertised: capacity
    ],
    "RE_MODEL_TEMP_UNAVAILABLE": [
        ("The model you've selected is temporarily unavailable.", (), "model_temporarily_unavailable"),
    ],
    "RE_USAGE_LIMIT": [("The monthly usage limit has been reached", (), "usage_limit"),
                        ("insufficient_quota", (), "usage_limit")],
    "RE_CONTEXT_OVERFLOW": [
        ("context_length_exceeded", (), "context_overflow"),
        ("prompt is too long: 9 tokens > 8 maximum", (), "context_overflow"),
    ],
    "RE_OVERSIZED": [("413 Request Entity Too Large", (), "oversized"), ("Input is too long.", (), "oversized")],
    "RE_MALFORMED": [("Improperly formed request.", (), "malformed")],
    "RE_RATE_LIMIT": [
        ("ThrottlingException", (), "rate_limit"),
        ("Request rejected (429)", (), "rate_limit"),
        ("Too Many Requests", (), "rate_limit"),
        ("Resource has been exhausted (e.g. check quota).", (), "rate_limit"),  # Gemini's 429
        ("RESOURCE_EXHAUSTED", (), "rate_limit"),
    ],
    "RE_OVERLOADED": [("API Error: 529 Overloaded", (), "overloaded"), ("overloaded_error", (), "overloaded")],
    "RE_SERVER_ERROR": [("502 Bad Gateway", (), "server_error"), ("Internal Server Error", (), "server_error"),
                         ("status: 503", (), "server_error")],
    "RE_STREAM_TIMEOUT": [("The stream timed out receiving the response after 2000ms", (), "stream_timeout")],
    "RE_CONNECTION_REFUSED": [("connect ECONNREFUSED 127.0.0.1:443", (), "connection_refused"),
                               ("error sending request", (), "connection_refused")],
}
TRANSIENT_KINDS = {"model_temporarily_unavailable", "rate_limit", "overloaded", "server_error", "stream_timeout",
                   "connection_refused"}
KIND_MARKER = {
    "prompt_busy": "still working",
    "session_lost": "no longer has this conversation",
    "auth": "not signed in",
    "refusal": "declined",
    "model_not_entitled": "Choose another model",
    "model_temporarily_unavailable": "please try again",
    "usage_limit": "usage limit has been reached",
    "context_overflow": "context window",
    "oversized": "too large",
    "malformed": "malformed",
    "rate_limit": "rate-limiting",
    "overloaded": "overloaded",
    "server_error": "server error",
    "stream_timeout": "timed out",
    "connection_refused": "could not connect",
}
SAMPLES = [(name, text, adv, kind) for name, items in PATTERN_SAMPLES.items() for text, adv, kind in items]


def test_every_pattern_in_the_module_has_samples() -> None:
    patterns = {name for name, value in vars(failure_patterns).items() if name.startswith("RE_")}
    assert all(isinstance(getattr(failure_patterns, name), re.Pattern) for name in patterns)
    assert patterns == set(PATTERN_SAMPLES) | {"RE_KIRO_ENVELOPE"}
    in_table = {rule.pattern for rule in failures._RULES if rule.pattern is not None}
    assert in_table == {getattr(failure_patterns, n) for n in PATTERN_SAMPLES}


@pytest.mark.parametrize(
    ("name", "text", "advertised", "kind"), SAMPLES, ids=[f"{s[0]}:{s[1][:20]}" for s in SAMPLES]
)
def test_each_pattern_sample_agrees_on_verdict_and_wording(
    name: str, text: str, advertised: tuple[str, ...], kind: str
) -> None:
    assert getattr(failure_patterns, name).search(text)
    transient = kind in TRANSIENT_KINDS
    raw = kiro(text)
    got = classify(raw, advertised_models=advertised)
    assert (got.kind, got.transient) == (kind, transient)
    assert _is_transient_raw_error(raw, advertised_models=advertised) is transient
    assert KIND_MARKER[kind] in got.prose
    assert ("please try again" in got.prose) == transient
    # the same sentence inside Kiro's envelope, with object data, reaches the same row
    assert (
        classify({"code": -32603, "data": {"message": ENVELOPE + text}}, advertised_models=advertised) == got
    )


# -- the wrong field, the wrong number -----------------------------------------------------------------


def test_pattern_echoed_in_an_unrelated_field_does_not_classify() -> None:
    raw = {
        "code": -32603,
        "message": "Internal error",
        "data": {
            "message": "stream closed by peer",
            "codex_error_info": "other",
            "request_url": "https://api.example.com/v1/rate_limit/429/overloaded",
            "model": "gpt-429-rate-limit-overloaded-503",
            "hint": "Too Many Requests? Improperly formed request?",
        },
    }
    assert classify(raw) == failures.Classification(
        "unknown", False, "The agent reported an error: stream closed by peer"
    )
    exc = error_from_rpc(raw)
    assert type(exc) is AcpError and exc.transient is False


def test_pattern_echoed_in_a_nested_json_body_outside_its_error_fields_does_not_classify() -> None:
    body = '{"error": {"type": "api_error", "message": "upstream hiccup"}, "url": "https://x/rate-limit/429"}'
    assert classify(kiro(body)).kind == "unknown"


@pytest.mark.parametrize(
    "text",
    [
        "Upstream failed (request_id: 4290-abc-429) at 127.0.0.1:429",
        "Tool call failed for model claude-3-5-sonnet-20240529 on port 5003",
        "The model claude-500 answered with an empty turn",
        "req_429abcdef0123456789 failed",
    ],
)
def test_numbers_inside_ids_ports_and_model_names_are_not_statuses(text: str) -> None:
    got = classify(kiro(text))
    assert (got.kind, got.transient) == ("unknown", False)


# -- exceptions ------------------------------------------------------------------------------------

EXCEPTIONS: list[tuple[BaseException, str, bool, tuple[str, ...]]] = [
    (
        AcpError("not found", transient=False, data={
            "kind": "agent_missing", "command": "codex-acp", "agent": "codex",
            "hint": "npm install -g @zed-industries/codex-acp"}),
        "agent_missing", False, ("'codex-acp' was not found on PATH", "agents.codex.command",
                                 "npm install -g @zed-industries/codex-acp"),
    ),
    (
        AcpError("no cwd", transient=False, data={"kind": "cwd_missing", "cwd": "/srv/nowhere", "agent": "kiro"}),
        "cwd_missing", False, ("working folder does not exist", "agents.kiro.cwd"),
    ),
    (AcpTimeoutError("no answer", partial_output="half of the answer"), "timeout", True, ("timed out",)),
    (
        AcpProcessDied(
            exit_code=137, stderr_tail="booting\nfatal: bad ghp_16C7e42F292c6912E7710c838347Ae178B4a\n"
        ),
        "process_died",
        True,
        ("stopped unexpectedly", "exit code 137", "fatal: bad ghp_[redacted]"),
    ),
    (
        AcpAuthRequired(agent_line="error: You are not logged in, please log in with kiro-cli login"),
        "auth",
        False,
        ("kiro-cli login", "not signed in"),
    ),
    (
        AcpToolGateUnroutable(data={"agent": "kiro", "flag": "--trust-all-tools", "tool_gate": "ask"}),
        "tool_gate",
        False,
        ("agents.kiro.tool_gate", "--trust-all-tools", "'ask'"),
    ),
    (AcpToolGateUnroutable(), "tool_gate", False, ("agents.<name>.tool_gate", "--trust-tools")),
    (
        AcpModelUnavailable(model="claude-opus-4.5", available=("auto", "claude-sonnet-4")),
        "model_not_entitled",
        False,
        ("'claude-opus-4.5'", "auto, claude-sonnet-4", "Choose another model"),
    ),
    (AcpPromptBusy(), "prompt_busy", False, ("still working",)),
    (AcpPermissionNeeded(tool_title="Run ls"), "permission_needed", False, ("(Run ls)", "approval")),
    (AcpError("plain failure"), "unknown", False, ("plain failure",)),
    (
        AcpRuntimeDead(exit_code=1, stderr_tail="panic: boom"),
        "runtime_dead",
        True,
        ("exit code 1", "panic: boom"),
    ),
    (AcpRequestTimeout(method="session/new", budget_s=30), "request_timeout", True, ("30 seconds",)),
    (AcpWorkspaceBindingError("bound to /a, asked for /b"), "workspace_binding", False, ("workspace",)),
    (AcpRuntimeError("pipe closed"), "runtime_error", True, ("pipe closed",)),
    # The relay's own bugs: one fixed sentence; their text (internals, paths, secrets) stays in the log.
    (KeyError("OPENAI_API_KEY=sk-AbCdEfGhIjKlMnOpQrStUvWx"), "unknown", False, ("its log has the details",)),
    (RuntimeError(""), "unknown", False, ("its log has the details",)),
    (AttributeError("'NoneType' object has no attribute 'runtime'"), "unknown", False, ("did not expect",)),
]


def test_an_internal_failure_never_shows_its_own_text() -> None:
    for exc in (KeyError("OPENAI_API_KEY"), AttributeError("'NoneType' object has no attribute 'runtime'"),
                OSError("store /home/u/.local/state/acp-relay/relay.db: database is locked")):
        prose = _format_acp_error(exc)
        assert str(exc).strip("'") not in prose and "NoneType" not in prose and "/home/u" not in prose


@pytest.mark.parametrize(("exc", "kind", "transient", "says"), EXCEPTIONS, ids=lambda v: type(v).__name__)
def test_exceptions_are_classified(
    exc: BaseException, kind: str, transient: bool, says: tuple[str, ...]
) -> None:
    got = classify(exc, backend="kiro")
    assert (got.kind, got.transient) == (kind, transient)
    for phrase in says:
        assert phrase in got.prose
    assert ("please try again" in got.prose.lower()) == transient
    assert type(exc).__name__ not in got.prose
    assert "Traceback" not in got.prose


def test_timeout_prose_leaves_partial_output_to_the_caller() -> None:
    assert "half of the answer" not in _format_acp_error(
        AcpTimeoutError("x", partial_output="half of the answer")
    )


def test_auth_line_naming_the_command_is_not_repeated() -> None:
    exc = AcpAuthRequired(
        agent_line="You are not logged in, please log in with kiro-cli login", command="kiro-cli login"
    )
    assert _format_acp_error(exc, backend="kiro").count("kiro-cli login") == 1


def test_claude_seam_uses_its_own_retry_hint() -> None:
    assert _format_acp_error(AcpTimeoutError(), backend="claude").endswith("try your request again.")


# -- error_from_rpc ------------------------------------------------------------------------------


def test_minus_32000_is_auth_required_with_the_backend_login_command() -> None:
    exc = error_from_rpc({"code": -32000, "message": "Authentication required"}, backend="kiro")
    assert isinstance(exc, AcpAuthRequired)
    assert (exc.transient, exc.command, exc.rpc_code) == (False, "kiro-cli login", -32000)


def test_minus_32000_with_error_type_is_not_auth() -> None:
    raw = {"code": -32000, "message": "Invalid request", "data": {"errorType": "ValidationException"}}
    exc = error_from_rpc(raw, backend="kiro")
    assert not isinstance(exc, AcpAuthRequired)
    assert exc.transient is False and exc.data == raw["data"]


def test_prompt_busy_becomes_its_own_type() -> None:
    assert isinstance(error_from_rpc(kiro("Prompt already in progress")), AcpPromptBusy)


def test_model_absent_from_advertised_is_unavailable_and_present_is_capacity() -> None:
    absent = error_from_rpc(kiro(NOT_AVAILABLE), backend="kiro", advertised_models=("auto",))
    assert isinstance(absent, AcpModelUnavailable)
    assert (absent.model, absent.available, absent.transient) == ("claude-opus-4.5", ("auto",), False)
    present = error_from_rpc(
        kiro(NOT_AVAILABLE), backend="kiro", advertised_models=("auto", "claude-opus-4.5")
    )
    assert type(present) is AcpError and present.transient is True


# -- what a person may be told ------------------------------------------------------------------------

SLASH_WORD = re.compile(r"(?<![\w.:/-])/([A-Za-z][\w-]*)")
COMMAND_LEAKS = [
    {"code": -32603, "message": "Internal error: Please run /login"},
    kiro("Something odd happened. Use /model or /new or !compact or !new to continue."),
    kiro(f"{ENVELOPE}Unknown failure, try '/usage' for more detail"),
]


def _all_prose() -> list[str]:
    out = []
    for backend in ("kiro", "claude", "codex", "generic"):
        for case in CASES:
            out.append(_format_acp_error(case.raw, backend=backend, advertised_models=case.advertised))
        for _name, text, adv, _kind in SAMPLES:
            out.append(_format_acp_error(kiro(text), backend=backend, advertised_models=adv))
        for exc, *_ in EXCEPTIONS:
            out.append(_format_acp_error(exc, backend=backend))
        out += [_format_acp_error(raw, backend=backend) for raw in COMMAND_LEAKS]
        out += [_format_acp_error(error, backend=backend) for _n, _r, error in _captured_errors()]
    return out


def test_prose_names_no_command_but_compact() -> None:
    texts = _all_prose()
    assert any("/compact" in text for text in texts)
    for text in texts:
        assert "/new" not in text, text
        assert not re.search(r"!\w", text), text
        assert {word for word in SLASH_WORD.findall(text)} <= {"compact"}, text


def test_provider_commands_are_described_not_named() -> None:
    assert _format_acp_error(COMMAND_LEAKS[2]) == (
        "The agent reported an error: Unknown failure, try the agent's usage command for more detail"
    )


SECRET_SAMPLES = [
    ("AKIAIOSFODNN7EXAMPLE", "AKIA[redacted]"),
    ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", "ghp_[redacted]"),
    ("xoxb-123456789012-1234567890123-AbCdEfGhIjKl", "xoxb-[redacted]"),
    ("123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "123456789:[redacted]"),
    ("Bearer eyJhbGciOiJIUzI1NiJ9abcdef", "Bearer [redacted]"),
    ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx", "sk-ant-[redacted]"),
    ("ANTHROPIC_API_KEY=whatever-value-1", "ANTHROPIC_API_KEY=[redacted]"),
]


@pytest.mark.parametrize(("secret", "hint"), SECRET_SAMPLES, ids=[s[1] for s in SECRET_SAMPLES])
def test_formatted_errors_are_redacted(secret: str, hint: str) -> None:
    for error in (
        kiro(f"{ENVELOPE}upstream echoed {secret} back"),
        kiro(f"Input is too long. Header was {secret}"),
        {"code": -32000, "message": f"Authentication required: {secret} rejected"},
        AcpProcessDied(exit_code=2, stderr_tail=f"boom {secret}"),
        AcpAuthRequired(agent_line=f"login failed for {secret}"),
    ):
        prose = _format_acp_error(error)
        assert secret not in prose, prose
        assert hint in prose, prose
    internal = _format_acp_error(ValueError(f"cannot parse {secret}"))
    assert secret not in internal and hint not in internal  # the relay's own failure shows no text at all


def test_a_long_sentence_is_cut_without_leaking_a_cut_token() -> None:
    prose = _format_acp_error(kiro("x" * 384 + " sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx " + "y" * 40))
    assert "api03" not in prose and prose.endswith("…")


# -- one verdict per exception, whoever asks later ---------------------------------------------------


def test_exception_from_rpc_keeps_its_verdict_when_a_later_caller_lacks_the_advertised_models() -> None:
    # Kiro: "The model 'X' is not available" with X advertised is capacity (retried); the engine and
    # `ask` word the final failure without the advertised models and must still say capacity.
    exc = error_from_rpc(kiro(NOT_AVAILABLE), backend="kiro", advertised_models=("auto", "claude-opus-4.5"))
    expected = classify(kiro(NOT_AVAILABLE), backend="kiro", advertised_models=("auto", "claude-opus-4.5"))
    assert (expected.kind, expected.transient) == ("model_temporarily_unavailable", True)
    assert exc.transient is True
    for opts in ({}, {"backend": "generic"}, {"backend": "kiro"}, {"advertised_models": ("auto",)}):
        assert classify(exc, **opts) == expected
        assert _format_acp_error(exc, **opts) == expected.prose
    assert "no capacity right now" in _format_acp_error(exc)
    assert "upgrade" not in _format_acp_error(exc)


def test_every_exception_from_rpc_carries_the_verdict_it_was_built_with() -> None:
    for case in CASES:
        exc = error_from_rpc(case.raw, backend=case.backend, advertised_models=case.advertised)
        stored = exc.classification  # type: ignore[attr-defined]
        assert (stored.kind, stored.transient) == (case.kind, case.transient) == (stored.kind, exc.transient)


# -- redact first, then cut --------------------------------------------------------------------------

TOKENS = [
    ("sk-ant-api03-" + "A" * 40, "sk-ant-"),
    ("ghp_" + "B" * 36, "ghp_"),
    ("123456789:" + "C" * 35, "123456789:"),
]


@pytest.mark.parametrize(("token", "hint"), TOKENS, ids=[t[1] for t in TOKENS])
@pytest.mark.parametrize("pad", [270, 280, 285, 290, 295])
def test_a_token_at_the_cut_never_leaves_a_prefix_behind(token: str, hint: str, pad: int) -> None:
    secret_part = token.removeprefix(hint)  # "AAAA…": any three of them in the prose is a leak
    for exc in (
        AcpProcessDied("died", exit_code=1, stderr_tail="boot\n" + "x" * pad + " key " + token),
        AcpRuntimeDead(exit_code=1, stderr_tail="y" * pad + " " + token),
        RuntimeError("z" * pad + " " + token),
    ):
        prose = _format_acp_error(exc)
        assert secret_part[:3] not in prose, prose


# -- raw JSON, tracebacks and panics never reach a person ----------------------------------------------

RAW_SHAPES = [
    (
        "truncated-json",
        {"code": -32603, "message": 'Internal error: API Error: 400 {"type":"error","error":{"type":'
         '"invalid_request_error","message":"messages.3: tool_use ids were found without'},
        "The agent reported an error: API Error: 400 messages.3: tool_use ids were found without…",
    ),
    (
        "truncated-json-before-the-message",
        {"code": -32603, "message": 'Internal error: API Error: 400 {"type":"error","error":{"ty'},
        "The agent reported an error: API Error: 400",
    ),
    (
        "python-traceback-first",
        kiro('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    boom()\n'
             "ValueError: bad input"),
        "The agent reported an error: ValueError: bad input",
    ),
    (
        "rust-panic",
        kiro("thread 'main' panicked at src/x.rs:1:1:\nindex out of range\n"
             "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"),
        "The agent reported an error: index out of range",
    ),
    (
        "rust-panic-old-format",
        kiro("thread 'tokio-runtime-worker' panicked at 'called `Option::unwrap()` on a `None` value', "
             "src/main.rs:10:5\nstack backtrace:\n   0: rust_begin_unwind"),
        "The agent reported an error: called `Option::unwrap()` on a `None` value",
    ),
    ("backtrace-first", kiro("BACKTRACE\n   6: chat_cli::cli::chat::ChatSession"),
     "The agent failed without giving a reason."),
]


@pytest.mark.parametrize(("name", "raw", "prose"), RAW_SHAPES, ids=[r[0] for r in RAW_SHAPES])
def test_raw_json_tracebacks_and_panics_become_the_providers_sentence(
        name: str, raw: dict[str, Any], prose: str) -> None:
    got = classify(raw)
    assert got.prose == prose
    for leak in ("{", '"type"', "Traceback", "File ", "panicked", "RUST_BACKTRACE", ".rs:", "backtrace"):
        assert leak not in got.prose


def test_a_cut_off_json_body_still_classifies_by_its_type() -> None:
    raw = {"code": -32603, "message": 'Internal error: API Error: 529 {"type":"error","error":{"type":'
           '"overloaded_error","message":"Overloa'}
    assert (classify(raw).kind, classify(raw).transient) == ("overloaded", True)


# -- a lost session ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [
        AcpError("Resource not found", rpc_code=-32002, data={"uri": "s1"}),
        error_from_rpc({"code": -32002, "message": "Resource not found: s1", "data": {"uri": "s1"}}),
        error_from_rpc({"code": -32603, "message": "Internal error", "data": {"details": "Session not found"}}),
        error_from_rpc(kiro("Session s-42 not found")),
        AcpError("Internal error: Unknown session: s1", rpc_code=-32603),
    ],
    ids=["32002", "32002-rpc", "claude-details", "kiro-string", "message-only"],
)
def test_a_session_the_agent_no_longer_has_is_lost(exc: AcpError) -> None:
    assert is_session_lost(exc)
    got = classify(exc, backend="kiro")
    assert (got.kind, got.transient) == ("session_lost", False)
    assert "no longer has this conversation" in got.prose and "new conversation" in got.prose
    assert not SLASH_WORD.search(got.prose)


@pytest.mark.parametrize(
    "exc",
    [
        AcpError("Internal error: MCP tool not found in this session", rpc_code=-32603),
        error_from_rpc(kiro("MCP tool not found in this session")),
        error_from_rpc(kiro("Tool 'grep' not found for session s1")),
        AcpError("file not found; the session continues", rpc_code=-32603),
        AcpPromptBusy(),
        AcpRuntimeDead(exit_code=1, stderr_tail="Session not found"),
        RuntimeError("Session not found"),
    ],
    ids=["mcp-tool", "mcp-tool-rpc", "tool-for-session", "file", "busy", "dead", "not-acp"],
)
def test_not_found_about_something_else_is_not_a_lost_session(exc: BaseException) -> None:
    assert not is_session_lost(exc)


# -- the words a person reads --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Use !new to continue", "Use the agent's new command to continue"),
        ("Use /new to continue", "Use the agent's new command to continue"),
        ("Try !compact or /compact", "Try /compact or /compact"),
        ("see https://x.example/a/b and ~/src/app", "see https://x.example/a/b and ~/src/app"),
        ("Please double press esc to edit your last message or start again",
         "Please rephrase your last message or start again"),
        ("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx", "key sk-ant-[redacted]"),
        ("wow!great", "wow!great"),
    ],
)
def test_person_text_describes_commands_and_redacts(text: str, expected: str) -> None:
    assert person_text(text) == expected
    assert person_text(expected) == expected


def test_login_command_never_names_a_path() -> None:
    assert login_command("generic", "/opt/bin/kiro-cli") == "kiro-cli login"
    assert login_command("kiro", "/usr/bin/python3") == "kiro-cli login"
    assert login_command("generic", "/usr/bin/python3") == ""
    exc = AcpAuthRequired("no", agent_line="error: You are not logged in", command="/home/u/.local/bin/kiro-cli")
    prose = _format_acp_error(exc)
    assert "Run kiro-cli login on the machine where the relay runs." in prose
    assert "/home" not in prose and "/bin" not in prose


def test_html_tags_in_a_provider_sentence_are_not_taken_for_commands() -> None:
    from core.failures import person_text

    assert person_text("the reply had an unclosed </b> and a <br/> tag") == (
        "the reply had an unclosed </b> and a <br/> tag")
    assert person_text("try /model opus") == "try the agent's model command opus"


@pytest.mark.parametrize(("name", "text", "advertised", "kind"), [s for s in SAMPLES if not s[2]],
                         ids=[f"{s[0]}:{s[1][:20]}" for s in SAMPLES if not s[2]])
def test_the_kind_of_a_bare_sentence_is_the_kind_its_raw_error_classifies_as(
        name: str, text: str, advertised: tuple[str, ...], kind: str) -> None:
    # text_kind is what the streamed-text hold-back asks on every first chunk: the same rows, no prose.
    assert failures.text_kind(text) == failures.classify({"message": text}).kind == kind


@pytest.mark.parametrize("backend", ["qwen", "opencode", "gemini", "copilot"])
def test_a_silent_timeout_of_an_agent_that_retries_by_itself_names_the_rate_limit(backend: str) -> None:
    """Qwen Code retries a 429 for minutes without a word: the prompt budget ends it, and the person
    learns why an agent like it goes quiet (not merely that it timed out)."""
    prose = classify(AcpTimeoutError("no answer within 900s", partial_output=""), backend=backend).prose
    assert "rate-limiting" in prose and "retries" in prose
    answered = classify(AcpTimeoutError("no answer", partial_output="half an answer"), backend=backend).prose
    assert "rate-limiting" not in answered, "it was answering: a plain timeout"
    assert "rate-limiting" not in classify(AcpTimeoutError("no answer"), backend="claude").prose


def _literal_runs_cover(items: Any, words: tuple[str, ...]) -> bool:
    """Every text the parsed pattern ``items`` matches holds one of ``words`` (lowercase), as far as its
    literal runs show: a run of literal characters (zero-width assertions between them change nothing)
    holds a word, or a part every match goes through (a group, a repeat of at least one, each branch of
    an alternation) does."""
    import re._constants as sre  # the parser's own op codes (tests only: not a public module)

    run: list[str] = []
    for op, arg in [*items, (None, None)]:
        if op is sre.LITERAL:
            run.append(chr(arg))
            continue
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue
        if any(word in "".join(run).lower() for word in words):
            return True
        run = []
        if op is sre.SUBPATTERN and _literal_runs_cover(arg[-1], words):
            return True
        if op is sre.BRANCH and all(_literal_runs_cover(alt, words) for alt in arg[1]):
            return True
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and arg[0] >= 1 and _literal_runs_cover(arg[2], words):
            return True
    return False


def test_each_failure_pattern_holds_one_of_its_words_wherever_it_matches() -> None:
    """``text_kind`` tries no pattern on a text without any of their words (most first chunks of an
    answer): each pattern's words must stand in whatever it matches, or a failure would read as an answer."""
    import re._parser as sre_parse

    patterns = {rule.pattern for rule in failures._RULES if rule.pattern is not None}
    assert set(failure_patterns.WORDS) == patterns
    for pattern, words in failure_patterns.WORDS.items():
        assert words and all(word == word.lower() for word in words), pattern.pattern
        assert _literal_runs_cover(sre_parse.parse(pattern.pattern, pattern.flags), words), pattern.pattern


@pytest.mark.parametrize(("name", "text", "advertised", "kind"), [s for s in SAMPLES if not s[2]],
                         ids=[f"{s[0]}:{s[1][:20]}" for s in SAMPLES if not s[2]])
def test_a_bare_sentence_names_its_failure_in_any_case_and_with_odd_letters(
        name: str, text: str, advertised: tuple[str, ...], kind: str) -> None:
    """The look for the patterns' words first finds them in any case, also where a letter the patterns
    take for "s" or "i" is not one ``str.lower`` makes (the patterns are tried then)."""
    odd = text.replace("s", "\u017f").replace("i", "\u0131")
    for variant in (text.upper(), text.swapcase(), f"é {text} →", odd):
        assert failures.text_kind(variant) == failures.classify({"message": variant}).kind


@pytest.mark.parametrize("text", ["Answer begins.", "Sure, here is the function you asked for:", "Done.\n\n"])
def test_an_answer_naming_no_failure_is_of_no_kind(text: str) -> None:
    assert failures.text_kind(text) == "unknown" == failures.classify({"message": text}).kind
