"""The AcpRuntimeError family: the process and request transport underneath AcpError, where the spec
documents it (acp/session_handle.py).

The classes are defined in the leaf module ``core.errors`` under the relay's one error root, so that
``core.failures`` can word them without importing the ``core.acp`` package; this module is their
import path. The spec documents AcpWorkspaceBindingError as ``acp/runtime.py``, which re-exports it
too: every import gives the same class.
"""

from __future__ import annotations

from core.errors import AcpRequestTimeout, AcpRuntimeDead, AcpRuntimeError, AcpWorkspaceBindingError

__all__ = ["AcpRequestTimeout", "AcpRuntimeDead", "AcpRuntimeError", "AcpWorkspaceBindingError"]
