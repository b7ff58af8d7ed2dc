"""The one root of the relay's errors, and the two ACP families under it (spec: error-handling.md).

Every error the relay raises on purpose is a :class:`RelayError`. Its class attribute ``code`` is a
stable dotted name (``acp.timeout``, ``acp.runtime.dead``, ``delivery.refused``, ``startup``,
``store``, ``config``) that logs, tests and callers can key off without matching prose or class
names; ``transient`` is the retry verdict (a fresh try may succeed). What a person reads for any
exception comes from one place, ``core.describing.describe``.

The ACP families are defined here, in a leaf module, so that ``core.failures`` can word them without
importing the ``core.acp`` package (which imports ``core.failures``): the dependency goes one way.
They keep the names, fields and hierarchy the spec draws, and stay importable where the spec puts
them: ``core.acp.client`` (the AcpError family) and ``core.acp.session_handle`` (the AcpRuntimeError
family). Errors carry structured fields, never prose assembled at the raise site.
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
    "AcpRequestTimeout",
    "AcpRuntimeDead",
    "AcpRuntimeError",
    "AcpTimeoutError",
    "AcpToolGateUnroutable",
    "AcpWorkspaceBindingError",
    "RelayError",
]


class RelayError(Exception):
    """The root of every error the relay raises on purpose.

    ``code`` names the failure for good (a class sets its own; a subclass refines it with a dot);
    ``transient`` says whether trying again may succeed. Anything that is not a RelayError reaching
    a funnel is the relay's own bug.
    """

    code: ClassVar[str] = "relay"
    transient: ClassVar[bool] = False
    #: The message is itself a plain sentence for a person (it names the operator's setting, nothing
    #: internal): ``core.describing.describe`` shows it. Otherwise a person reads the error's own prose.
    worded: ClassVar[bool] = False
    #: Otherwise, a fixed sentence a person can act on (the message stays for the log); "" for none: a
    #: person then reads the one sentence for a failure the relay did not expect.
    prose: ClassVar[str] = ""


# -- the AcpError family: protocol and prompt-level failures (spec: acp/client.py) ----------------


class AcpError(RelayError):
    """Base of protocol and prompt-level failures.

    ``transient`` is the retry verdict. The class sets the default; an instance built from a raw
    backend error carries the verdict the shared classification gave that error.
    ``rpc_code``/``data`` hold the raw JSON-RPC error when there was one.
    """

    code = "acp"
    transient = False
    #: Set by ``core.failures.error_from_rpc`` on what it builds: the verdict and prose, computed once.
    classification: Any = None

    def __init__(
        self,
        message: str = "",
        *,
        transient: bool | None = None,
        rpc_code: int | None = None,
        data: Any = None,
        partial_output: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        if transient is not None:
            self.transient = transient  # type: ignore[misc]  # per-instance verdict shadows the class one
        self.rpc_code = rpc_code
        self.data = data
        self.partial_output = partial_output

    def raw(self) -> dict[str, Any]:
        """The raw JSON-RPC error shape this exception was built from (for classification)."""
        return {"code": self.rpc_code, "message": self.message, "data": self.data}


class AcpTimeoutError(AcpError):
    """The prompt ran past its budget; ``partial_output`` holds what had streamed."""

    code = "acp.timeout"
    transient = True


class AcpPermissionNeeded(AcpError):
    """A tool call needs approval and the caller supplied no approver."""

    code = "acp.permission_needed"

    def __init__(self, message: str = "", *, tool_title: str = "", tool_kind: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.tool_title = tool_title
        self.tool_kind = tool_kind


class AcpProcessDied(AcpError):
    """The agent process exited mid-conversation."""

    code = "acp.process_died"
    transient = True

    def __init__(self, message: str = "", *, exit_code: int | None = None, stderr_tail: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class AcpAuthRequired(AcpError):
    """The agent is not logged in. ``agent_line`` is the agent's own sentence about it."""

    code = "acp.auth"

    def __init__(self, message: str = "", *, agent_line: str = "", command: str = "", **kw: Any) -> None:
        kw["transient"] = False  # logging in is the person's job: never retried
        super().__init__(message, **kw)
        self.agent_line = agent_line
        self.command = command


class AcpToolGateUnroutable(AcpError):
    """Tool calls would bypass the PreToolUse gate (a configuration fact; wraps ToolGateUnroutable)."""

    code = "acp.tool_gate"

    def __init__(self, message: str = "", **kw: Any) -> None:
        kw["transient"] = False  # a respawn reads the same configuration: never retried
        super().__init__(message, **kw)


class AcpModelUnavailable(AcpError):
    """The requested model is not entitled on this account (absent from the advertised models)."""

    code = "acp.model_not_entitled"

    def __init__(self, message: str = "", *, model: str = "", available: tuple[str, ...] = (), **kw: Any) -> None:
        kw["transient"] = False  # the plan lacks the model: never retried
        super().__init__(message, **kw)
        self.model = model
        self.available = available


class AcpPromptBusy(AcpError):
    """A prompt is already in flight on this session."""

    code = "acp.prompt_busy"


# -- the AcpRuntimeError family: process and transport (spec: acp/session_handle.py) -------------


class AcpRuntimeError(RelayError):
    """Base of transport failures. ``transient``: a fresh process or a resend may succeed."""

    code = "acp.runtime"
    transient = True

    def __init__(self, message: str = "", *, stderr_tail: str = "", transient: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.stderr_tail = stderr_tail
        if transient is not None:
            self.transient = transient  # type: ignore[misc]  # per-instance verdict shadows the class one


class AcpRuntimeDead(AcpRuntimeError):
    """The underlying agent process has died (or its stdout closed)."""

    code = "acp.runtime.dead"

    def __init__(self, message: str = "", *, exit_code: int | None = None, stderr_tail: str = "",
                 transient: bool | None = None) -> None:
        super().__init__(message, stderr_tail=stderr_tail, transient=transient)
        self.exit_code = exit_code


class AcpRequestTimeout(AcpRuntimeError):
    """A request's response missed its own time budget."""

    code = "acp.runtime.request_timeout"

    def __init__(self, message: str = "", *, method: str = "", budget_s: float = 0.0,
                 transient: bool | None = None) -> None:
        super().__init__(message, transient=transient)
        self.method = method
        self.budget_s = budget_s


class AcpWorkspaceBindingError(AcpRuntimeError):
    """A runtime bound to one cwd was asked to serve another (spec: acp/runtime.py)."""

    code = "acp.runtime.workspace_binding"
    transient = False
