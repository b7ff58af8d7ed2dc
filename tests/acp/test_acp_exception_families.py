"""The two exception families exactly as spec/error-handling.md draws them: names, bases, the
modules they are imported from, ``transient`` on the class and per instance, ``partial_output``.

Both families sit under the relay's one error root (``core.errors.RelayError``) and are defined in
that leaf module, so that ``core.failures`` can word them without importing the ``core.acp`` package
(which imports ``core.failures``); the spec's modules are their import paths. AcpWorkspaceBindingError
is documented as ``acp/runtime.py``: it is importable from there too."""

from __future__ import annotations

import pytest

from core import errors
from core.acp import client, runtime, session_handle
from core.acp.tool_gate import ToolGateUnroutable

ACP_ERRORS = {  # name: (class-level transient)
    "AcpTimeoutError": True,
    "AcpPermissionNeeded": False,
    "AcpProcessDied": True,
    "AcpAuthRequired": False,
    "AcpToolGateUnroutable": False,
    "AcpModelUnavailable": False,
    "AcpPromptBusy": False,
}
RUNTIME_ERRORS = {"AcpRuntimeDead": (session_handle, True), "AcpRequestTimeout": (session_handle, True),
                  "AcpWorkspaceBindingError": (session_handle, False)}
NEVER_RETRIED = ("AcpAuthRequired", "AcpToolGateUnroutable", "AcpModelUnavailable")


def test_the_two_families_are_independent_under_the_one_root() -> None:
    assert client.AcpError.__bases__ == (errors.RelayError,)
    assert session_handle.AcpRuntimeError.__bases__ == (errors.RelayError,)
    assert not issubclass(session_handle.AcpRuntimeError, client.AcpError)
    assert not issubclass(client.AcpError, session_handle.AcpRuntimeError)
    assert client.AcpError is errors.AcpError and "AcpError" in client.__all__
    assert session_handle.AcpRuntimeError is errors.AcpRuntimeError and "AcpRuntimeError" in session_handle.__all__


@pytest.mark.parametrize(("name", "transient"), ACP_ERRORS.items())
def test_acp_errors_sit_directly_under_acp_error_in_the_client_module(name: str, transient: bool) -> None:
    cls = getattr(client, name)
    assert cls.__bases__ == (client.AcpError,)
    assert cls is getattr(errors, name) and name in client.__all__
    assert cls.transient is transient
    error = cls("x", partial_output="half an answer")
    assert error.partial_output == "half an answer"


@pytest.mark.parametrize(("name", "where"), RUNTIME_ERRORS.items())
def test_runtime_errors_sit_directly_under_acp_runtime_error(name: str, where: tuple[object, bool]) -> None:
    module, transient = where
    cls = getattr(module, name)
    assert cls.__bases__ == (session_handle.AcpRuntimeError,)
    assert cls is getattr(errors, name) and name in module.__all__  # type: ignore[attr-defined]
    assert cls.transient is transient
    assert cls("x", transient=not transient).transient is (not transient)  # per-instance verdict


def test_the_workspace_binding_error_is_importable_where_the_spec_documents_it() -> None:
    assert runtime.AcpWorkspaceBindingError is session_handle.AcpWorkspaceBindingError
    assert "AcpWorkspaceBindingError" in runtime.__all__


@pytest.mark.parametrize("name", [n for n in ACP_ERRORS if n not in NEVER_RETRIED])
def test_the_verdict_can_be_set_per_instance(name: str) -> None:
    cls = getattr(client, name)
    assert cls("x", transient=True).transient is True
    assert cls("x", transient=False).transient is False


@pytest.mark.parametrize("name", NEVER_RETRIED)
def test_configuration_facts_are_never_transient_even_if_asked(name: str) -> None:
    assert getattr(client, name)("x", transient=True).transient is False


def test_the_tool_gate_error_wraps_the_gates_own_exception(tmp_path) -> None:
    from core.acp import AgentSpec
    from core.acp.tool_gate import check_routable

    spec = AgentSpec("kiro", "kiro-cli", ("acp", "--trust-all-tools"), cwd=str(tmp_path), tool_gate="ask")
    with pytest.raises(client.AcpToolGateUnroutable) as raised:
        check_routable(spec)
    assert isinstance(raised.value.__cause__, ToolGateUnroutable)
