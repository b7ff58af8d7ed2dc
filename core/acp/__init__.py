"""The ACP client: agent processes, JSON-RPC, sessions, turns, the tool gate.

Where things are:

- ``client``: the AcpError family (protocol and prompt-level failures);
  ``session_handle``: the AcpRuntimeError family (process and transport).
- ``spec``: ``AgentSpec``, how to start an agent; ``process``: spawning and stopping it.
- ``connection``: the JSON-RPC reader and writer; ``runtime``: one agent process and its sessions;
  ``pool``: one runtime per (agent, cwd), reaped when idle.
- ``session``: one ACP session and its prompt turns; ``_dispatch`` and ``types``: frames -> events.
- ``tool_gate``: which tool calls need approval.

Only the leaf ``AgentSpec`` is re-exported here. Importing any ``core.acp.*`` module runs this
file first, and ``core.failures`` (which the runtime uses) imports the error families: were the
runtime, pool or session imported here, that would close an import circle.
"""

from __future__ import annotations

from core.acp.spec import AgentSpec

__all__ = ["AgentSpec"]
