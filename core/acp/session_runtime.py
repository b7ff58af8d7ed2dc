"""What a session uses of the runtime that serves it (``core.acp.runtime.AcpRuntime``): a Protocol, so
the runtime can make sessions without the two modules importing each other."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

from core.acp.connection import JsonRpcConnection
from core.acp.spec import AgentSpec

__all__ = ["SessionRuntime"]


class SessionRuntime(Protocol):
    """What a session uses of the runtime that serves it (``core.acp.runtime.AcpRuntime``), so the
    runtime can make sessions without the two modules importing each other."""

    spec: AgentSpec
    backend: str
    cwd: str
    conn: JsonRpcConnection

    @property
    def sessions(self) -> Mapping[str, object]:
        """The sessions this runtime routes frames to, by id."""
        ...

    @property
    def alive(self) -> bool:
        """The agent process is running."""
        ...

    @property
    def accepts_images(self) -> bool:
        """The agent takes image content blocks."""
        ...

    @property
    def agent_name(self) -> str:
        """``agentInfo.name`` from the agent's answer to ``initialize``."""
        ...

    @property
    def steering(self) -> bool:
        """The agent takes ``_session/steering``."""
        ...

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None,
                      idle_key: str | None = None, models: tuple[str, ...] = ()) -> Any:
        """A request with its own budget; a JSON-RPC error becomes the classified AcpError."""
        ...

    def send_request(self, method: str, params: Any) -> tuple[int, asyncio.Future[Any]]:
        """Send a request without waiting for it: its id and the future of its raw answer."""
        ...

    def answer(self, future: asyncio.Future[Any], *, models: tuple[str, ...] = ()) -> Any:
        """The result of a request ``send_request`` sent, a JSON-RPC error as the classified AcpError."""
        ...

    def forget(self, session_id: str) -> None:
        """Stop routing frames to a session."""
        ...
