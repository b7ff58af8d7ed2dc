"""The ACP client: agent processes, JSON-RPC, sessions, turns, the tool gate."""

from __future__ import annotations

from core.acp.pool import RuntimePool
from core.acp.runtime import AcpRuntime, AcpWorkspaceBindingError
from core.acp.session import AcpSession
from core.acp.spec import AgentSpec

__all__ = ["AcpRuntime", "AcpSession", "AcpWorkspaceBindingError", "AgentSpec", "RuntimePool"]
