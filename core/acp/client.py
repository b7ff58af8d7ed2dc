"""The AcpError family: protocol and prompt-level failures (spec: acp/client.py).

Errors carry structured fields, never prose assembled at the raise site; the wording a person
sees is produced in one place, ``core.failures._format_acp_error``.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AcpAuthRequired",
    "AcpError",
    "AcpModelUnavailable",
    "AcpPermissionNeeded",
    "AcpProcessDied",
    "AcpPromptBusy",
    "AcpTimeoutError",
    "AcpToolGateUnroutable",
]


class AcpError(Exception):
    """Base of protocol and prompt-level failures.

    ``transient`` is the retry verdict. The class sets the default; an instance built from a raw
    backend error carries the verdict of ``_is_transient_raw_error`` for that error.
    ``code``/``data`` hold the raw JSON-RPC error when there was one.
    """

    transient: ClassVar[bool] = False
    #: Set by ``core.failures.error_from_rpc`` on what it builds: the verdict and prose, computed once.
    classification: Any = None

    def __init__(
        self,
        message: str = "",
        *,
        transient: bool | None = None,
        code: int | None = None,
        data: Any = None,
        partial_output: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        if transient is not None:
            self.transient = transient  # type: ignore[misc]  # per-instance verdict shadows the class one
        self.code = code
        self.data = data
        self.partial_output = partial_output

    def raw(self) -> dict[str, Any]:
        """The raw JSON-RPC error shape this exception was built from (for classification)."""
        return {"code": self.code, "message": self.message, "data": self.data}


class AcpTimeoutError(AcpError):
    """The prompt ran past its budget; ``partial_output`` holds what had streamed."""

    transient = True


class AcpPermissionNeeded(AcpError):
    """A tool call needs approval and the caller supplied no approver."""

    def __init__(self, message: str = "", *, tool_title: str = "", tool_kind: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.tool_title = tool_title
        self.tool_kind = tool_kind


class AcpProcessDied(AcpError):
    """The agent process exited mid-conversation."""

    transient = True

    def __init__(self, message: str = "", *, exit_code: int | None = None, stderr_tail: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class AcpAuthRequired(AcpError):
    """The agent is not logged in. ``agent_line`` is the agent's own sentence about it."""

    def __init__(self, message: str = "", *, agent_line: str = "", command: str = "", **kw: Any) -> None:
        kw["transient"] = False  # logging in is the person's job: never retried
        super().__init__(message, **kw)
        self.agent_line = agent_line
        self.command = command


class AcpToolGateUnroutable(AcpError):
    """Tool calls would bypass the PreToolUse gate (a configuration fact; wraps ToolGateUnroutable)."""

    def __init__(self, message: str = "", **kw: Any) -> None:
        kw["transient"] = False  # a respawn reads the same configuration: never retried
        super().__init__(message, **kw)


class AcpModelUnavailable(AcpError):
    """The requested model is not entitled on this account (absent from the advertised models)."""

    def __init__(self, message: str = "", *, model: str = "", available: tuple[str, ...] = (), **kw: Any) -> None:
        kw["transient"] = False  # the plan lacks the model: never retried
        super().__init__(message, **kw)
        self.model = model
        self.available = available


class AcpPromptBusy(AcpError):
    """A prompt is already in flight on this session."""
