"""The ACP client: agent processes, JSON-RPC, sessions, turns, the tool gate.

Where things are:

- ``client``: the AcpError family (protocol and prompt-level failures);
  ``session_handle``: the AcpRuntimeError family (process and transport). Both are defined in the
  leaf ``core.errors``, so ``core.failures`` words them without importing this package.
- ``spec``: ``AgentSpec``, how to start an agent; ``process``: spawning and stopping it.
- ``connection``: the JSON-RPC reader and writer; ``runtime``: one agent process and its sessions;
  ``pool``: one runtime per (agent, cwd), reaped when idle.
- ``session``: one ACP session and its prompt turns; ``_dispatch`` and ``types``: frames -> events;
  ``error_text``: the agent's text that is really an error.
- ``tool_gate``: which tool calls need approval.
"""

from __future__ import annotations

from core.acp.pool import RuntimePool
from core.acp.runtime import AcpRuntime
from core.acp.session import AcpSession
from core.acp.spec import AgentSpec

__all__ = ["AcpRuntime", "AcpSession", "AgentSpec", "RuntimePool"]
