"""The AcpRuntimeError family: the process and request transport underneath AcpError
(spec: acp/session_handle.py).

AcpWorkspaceBindingError sits here with the rest of its family, so that ``core.failures`` can word
it without importing the runtime (which imports ``core.failures``). The spec documents it as
``acp/runtime.py``, which re-exports it: both imports give the same class.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["AcpRequestTimeout", "AcpRuntimeDead", "AcpRuntimeError", "AcpWorkspaceBindingError"]


class AcpRuntimeError(Exception):
    """Base of transport failures. ``transient``: a fresh process or a resend may succeed."""

    transient: ClassVar[bool] = True

    def __init__(self, message: str = "", *, stderr_tail: str = "", transient: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.stderr_tail = stderr_tail
        if transient is not None:
            self.transient = transient  # type: ignore[misc]  # per-instance verdict shadows the class one


class AcpRuntimeDead(AcpRuntimeError):
    """The underlying agent process has died (or its stdout closed)."""

    def __init__(self, message: str = "", *, exit_code: int | None = None, stderr_tail: str = "",
                 transient: bool | None = None) -> None:
        super().__init__(message, stderr_tail=stderr_tail, transient=transient)
        self.exit_code = exit_code


class AcpRequestTimeout(AcpRuntimeError):
    """A request's response missed its own time budget."""

    def __init__(self, message: str = "", *, method: str = "", budget_s: float = 0.0,
                 transient: bool | None = None) -> None:
        super().__init__(message, transient=transient)
        self.method = method
        self.budget_s = budget_s


class AcpWorkspaceBindingError(AcpRuntimeError):
    """A runtime bound to one cwd was asked to serve another (spec: acp/runtime.py)."""

    transient = False
