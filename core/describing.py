"""Any exception as a person reads it: ``describe`` (the public wording of every failure, the spec's
families through ``core.failures``' one table, the relay's own through ``RelayError``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import AcpError, AcpRuntimeError, RelayError
from core.failures import INTERNAL_FAILURE, classify, suggests_reset
from core.redact import redact

__all__ = ["Described", "describe"]


@dataclass(frozen=True, slots=True)
class Described:
    """What an exception means to a person: the sentence to show, whether trying again may help, and
    the stable code of what happened (``acp.rate_limit``, ``acp.runtime.dead``, ``internal``...)."""

    prose: str
    transient: bool
    code: str
    #: The prose tells the person to start a new conversation (a surface adds its own way to).
    reset: bool = False


def describe(exc: BaseException, *, backend: str = "generic", advertised_models: Sequence[str] = ()) -> Described:
    """Any exception as a person reads it. The ACP families go through the shared ``RE_*`` rows (a
    plain AcpError's code names the kind found: ``acp.malformed``); a RelayError ``worded`` for a person
    says its message, one with its own ``prose`` says that; anything else is the relay's own failure:
    the one fixed ``INTERNAL_FAILURE``."""
    if isinstance(exc, AcpError | AcpRuntimeError):
        verdict = classify(exc, backend=backend, advertised_models=advertised_models)
        code = type(exc).code
        return Described(verdict.prose, verdict.transient, f"acp.{verdict.kind}" if code == AcpError.code else code,
                         suggests_reset(exc, verdict.kind))
    if isinstance(exc, RelayError):
        prose = redact(str(exc)) if exc.worded else exc.prose or INTERNAL_FAILURE
        return Described(prose, exc.transient, exc.code)
    return Described(INTERNAL_FAILURE, False, "internal")
