"""The naive bots' agent side: the official ACP Python SDK (agent-client-protocol), one agent process
for every conversation, one session per conversation, every text chunk handed on as it arrives.

Written as a newcomer would with the SDK's own client: no retry, no journal, no queue; a prompt
that arrives while the conversation's previous one runs simply runs too (the bench never does that).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import AgentMessageChunk, TextContentBlock

from bench.burst.bench_agent import AGENT_ENV, command

__all__ = ["Agent", "agent", "arguments"]

class _Client:
    """What the agent may call on us: only session/update matters here."""

    def __init__(self) -> None:
        self.chunks: dict[str, asyncio.Queue[str | None]] = {}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            queue = self.chunks.get(session_id)
            if queue is not None:
                queue.put_nowait(update.content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the bench's scripts run no tools")


class Agent:
    """One agent process; ``answer`` runs a prompt and hands each chunk, in order, to a sender."""

    def __init__(self, conn: Any, cwd: str) -> None:
        self.conn = conn
        self.cwd = cwd
        self.client: _Client | None = None
        self.sessions: dict[str, str] = {}  # conversation -> session id

    async def answer(self, conversation: str, text: str, send: Callable[[str], Awaitable[None]]) -> None:
        """Prompt the conversation's session; ``send(chunk)`` is awaited once per chunk, in order."""
        assert self.client is not None
        session = self.sessions.get(conversation)
        if session is None:
            session = (await self.conn.new_session(cwd=self.cwd, mcp_servers=[])).session_id
            self.sessions[conversation] = session
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.client.chunks[session] = queue

        async def sender() -> None:
            while (chunk := await queue.get()) is not None:
                await send(chunk)

        task = asyncio.create_task(sender())
        try:
            await self.conn.prompt(session_id=session, prompt=[text_block(text)])
        finally:
            queue.put_nowait(None)
            await task
            self.client.chunks.pop(session, None)


@contextlib.asynccontextmanager
async def agent(cwd: str) -> AsyncIterator[Agent]:
    """The agent named in ``AGENT_ENV`` (the scripted one by default) started, as the relay starts it,
    and initialised."""
    client = _Client()
    transport = {"limit": 50 * 1024 * 1024, "stderr": asyncio.subprocess.DEVNULL}
    program, *args = command(os.environ.get(AGENT_ENV) or "scripted")
    async with spawn_agent_process(client, program, *args, cwd=cwd,
                                   transport_kwargs=transport) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        link = Agent(conn, cwd)
        link.client = client
        yield link


def arguments(description: str) -> argparse.ArgumentParser:
    """The arguments every naive bot takes (``--cwd``: the agent's working directory)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cwd", required=True)
    return parser
