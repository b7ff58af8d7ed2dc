"""The relay's one error root and its public wording (``core.errors``, ``core.describing.describe``).

Every error the relay raises on purpose is a RelayError whose ``code`` is a stable dotted name;
``describe`` turns ANY exception into the sentence a person reads, the retry verdict the ladder
uses and that code. The dependency between the ACP client and the wording goes one way: the error
families and ``core.failures`` load without the ``core.acp`` package, which imports them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from core import errors
from core.acp.tool_gate import ToolGateUnroutable
from core.config import ConfigError
from core.describing import Described, describe
from core.engine.surface import (
    AnswerUnreadable,
    DeliveryError,
    DeliveryFailed,
    DeliveryRefused,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    RateLimited,
    StartupError,
)
from core.failures import INTERNAL_FAILURE, error_from_rpc
from core.redact import register_secrets
from core.retry import Attempt, RetryPolicy, with_retries
from core.store import LeaseLost, StoreError

ROOT = Path(__file__).resolve().parent.parent

#: Every error class and its code. A code is a promise (logs, callers and tests key off it): change
#: one here only on purpose.
CODES: dict[type[errors.RelayError], str] = {
    errors.RelayError: "relay",
    errors.AcpError: "acp",
    errors.AcpTimeoutError: "acp.timeout",
    errors.AcpPermissionNeeded: "acp.permission_needed",
    errors.AcpProcessDied: "acp.process_died",
    errors.AcpAuthRequired: "acp.auth",
    errors.AcpToolGateUnroutable: "acp.tool_gate",
    errors.AcpModelUnavailable: "acp.model_not_entitled",
    errors.AcpPromptBusy: "acp.prompt_busy",
    errors.AcpRuntimeError: "acp.runtime",
    errors.AcpRuntimeDead: "acp.runtime.dead",
    errors.AcpRequestTimeout: "acp.runtime.request_timeout",
    errors.AcpWorkspaceBindingError: "acp.runtime.workspace_binding",
    StartupError: "startup",
    ConfigError: "config",
    StoreError: "store",
    LeaseLost: "store.lease_lost",
    ToolGateUnroutable: "tool_gate.unroutable",
    DeliveryError: "delivery",
    RateLimited: "delivery.rate_limited",
    MessageTooLong: "delivery.too_long",
    MarkupRejected: "delivery.markup_rejected",
    NotModified: "delivery.not_modified",
    DeliveryFailed: "delivery.failed",
    AnswerUnreadable: "delivery.unreadable",
    DeliveryRefused: "delivery.refused",
}


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_relay_error_has_its_own_stable_code() -> None:
    assert {cls: cls.code for cls in CODES} == CODES
    assert len(set(CODES.values())) == len(CODES), "no two errors share a code"
    known = {c for c in _subclasses(errors.RelayError) if c.__module__.startswith("core.")}
    assert known <= set(CODES), f"an error without an entry here: {known - set(CODES)}"


@pytest.mark.parametrize("cls", [c for c in CODES if c is not errors.RelayError])
def test_a_subclass_code_refines_its_family_code(cls: type[errors.RelayError]) -> None:
    parent = next(b for b in cls.__mro__[1:] if issubclass(b, errors.RelayError))
    assert parent is errors.RelayError or cls.code.startswith(parent.code + "."), (cls, parent)


RATE_LIMIT = {"code": -32603, "message": "Internal error", "data": "ThrottlingException: slow down"}


@pytest.mark.parametrize(("error", "expected"), [
    (error_from_rpc(RATE_LIMIT), Described("The model provider is rate-limiting requests right now; please "
                                           "try again soon.", True, "acp.rate_limit")),
    (errors.AcpError("Improperly formed request.", rpc_code=-32603), Described(
        "The model provider rejected the request as malformed, so sending it again would fail the same way. "
        "Use /compact to shrink and repair the conversation, or start a new conversation.", False,
        "acp.malformed", reset=True)),  # the prose suggests a new conversation: a surface adds its way
    (errors.AcpTimeoutError("no answer within 5s"), Described(
        "The agent timed out before finishing its answer; please try again.", True, "acp.timeout")),
    (errors.AcpRuntimeDead("gone", exit_code=3), Described("The agent process has ended (exit code 3). "
                                                            "Please try again.", True, "acp.runtime.dead")),
], ids=["raw-rate-limit", "plain-malformed", "timeout", "runtime-dead"])
def test_describe_words_the_acp_families_by_the_shared_rows(error: BaseException, expected: Described) -> None:
    assert describe(error) == expected


def test_describe_uses_the_backend_for_what_it_knows_of_the_provider() -> None:
    assert describe(errors.AcpTimeoutError(), backend="claude").prose.endswith("try your request again.")


def test_a_worded_error_says_its_own_message_with_secrets_redacted() -> None:
    secret = "tok-5ecret-value-never-shown-123456"
    with register_secrets([secret]):
        said = describe(StartupError(f"the dashboard needs ACP_RELAY_DASHBOARD_TOKEN, not {secret}"))
    assert said.code == "startup" and not said.transient
    assert said.prose.startswith("the dashboard needs ACP_RELAY_DASHBOARD_TOKEN, not ") and secret not in said.prose
    config = ConfigError(None, [("agents.x.command", "Field required")])
    assert describe(config) == Described(str(config), False, "config")


@pytest.mark.parametrize(("error", "code"), [
    (ValueError("cannot parse /home/me/.ssh/id_rsa"), "internal"),
    (KeyError("session"), "internal"),
    (StoreError("/var/lib/relay.db", "disk I/O error"), "store"),
    (DeliveryRefused("403 Forbidden: bot was kicked"), "delivery.refused"),
])
def test_anything_not_worded_for_a_person_is_the_one_fixed_sentence(error: BaseException, code: str) -> None:
    assert describe(error) == Described(INTERNAL_FAILURE, False, code)


@pytest.mark.parametrize("error", [
    error_from_rpc(RATE_LIMIT), errors.AcpRuntimeDead("gone"), errors.AcpAuthRequired("x"),
    errors.AcpError("Improperly formed request."), ValueError("bug"),
], ids=["transient", "runtime", "auth", "terminal", "internal"])
async def test_the_retry_ladder_retries_exactly_what_describe_calls_transient(error: BaseException) -> None:
    tries: list[int] = []

    async def attempt(state: Attempt) -> str:
        tries.append(state.number)
        state.reached_agent = True
        raise error

    async def no_sleep(_s: float) -> None:
        return None

    with pytest.raises(type(error)):
        await with_retries(attempt, policy=RetryPolicy(attempts=2, budget_s=60, base_delay_s=0), sleep=no_sleep)
    assert len(tries) == (2 if describe(error).transient else 1)


def _loaded_after(statement: str) -> list[str]:
    listing = "print(' '.join(m for m in sys.modules if m == 'core.acp' or m.startswith('core.acp.')))"
    code = f"import sys\n{statement}\n{listing}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return out.stdout.split()


def test_the_wording_and_the_error_families_load_without_the_acp_package() -> None:
    assert _loaded_after("import core.failures, core.errors") == []


@pytest.mark.parametrize("first", ["import core.acp", "import core.acp.client", "from core.describing import describe",
                                   "import core.acp.session_handle"])
def test_the_acp_package_imports_in_any_order(first: str) -> None:
    loaded = _loaded_after(f"{first}\nimport core.acp\nfrom core.acp import AcpRuntime, RuntimePool, AcpSession")
    assert "core.acp.runtime" in loaded


def test_nothing_in_core_reaches_for_the_private_funnel_names() -> None:
    private = {"_format_acp_error", "_is_transient_raw_error"}
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and any(a.name in private for a in node.names):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == [], "describe() is the public face of core.failures"
