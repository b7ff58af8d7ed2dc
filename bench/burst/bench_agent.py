"""A lean ACP agent for the burst benchmark (``--agent bench``): stdlib only, one event loop, no threads.

    python -I bench/burst/bench_agent.py

The scripted test agent (``tests/fakes/acp_agent.py``) runs a thread per prompt, flushes every frame
and takes locks around each: in a burst of 1,000 conversations its own CPU is what both bots wait on,
so it hides their cost. This one serves only what the bench's prompts use, with the same wire shapes:
NDJSON JSON-RPC 2.0 on stdin/stdout, the frames of one round of the event loop written together.

Methods: ``initialize`` (protocolVersion 1, ``loadSession`` and ``sessionCapabilities.close`` as the
scripted agent advertises them with ``--close``), ``session/new``, ``session/prompt`` (one task per
prompt, many at once; a second prompt in a busy session is -32603), ``session/cancel`` (notification:
the running prompt answers ``cancelled``), ``session/close``, ``session/load`` (reopens a session this
process made, replaying no history). Anything else is -32601; a line that is not JSON is -32700.

Prompt scripts, one step a line, as the scripted agent reads them: ``text <words>`` (one
agent_message_chunk of exactly the rest of the line), ``sleep <seconds>``, ``chunks <N>`` ("w0 ",
"w1 ", ...), ``hang`` (until cancelled), ``stop <reason>``. A prompt whose first word is none of
these is answered with one chunk "echo: <text>"; an unknown verb later on is -32602.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

__all__ = ["AGENTS", "AGENT_ENV", "agent_argv", "command", "main"]

#: The agents a burst can run: the scripted test agent (the figures of record) or this one.
AGENTS = ("scripted", "bench")
#: How the naive bots learn which agent to start (the relay reads its config).
AGENT_ENV = "BENCH_BURST_AGENT"

PROTOCOL_VERSION = 1
VERBS = frozenset({"text", "sleep", "chunks", "hang", "stop"})
MODES = [
    {"id": "default", "name": "Default", "description": "Ask before edits and commands"},
    {"id": "plan", "name": "Plan", "description": "Plan only, no changes"},
    {"id": "auto", "name": "Auto", "description": "Run tools without asking"},
]
CAPABILITIES = {
    "sessionCapabilities": {"close": {}},
    "loadSession": True,
    "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
    "mcpCapabilities": {"http": False, "sse": False},
}
INFO = {"name": "bench-acp-agent", "title": "Bench ACP Agent", "version": "0.1.0"}
_CHUNK = ('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%s,"update":'
          '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%s}}}}\n')
_LIMIT = 64 * 1024 * 1024


def agent_argv() -> list[str]:
    """This agent's command, in isolated mode (no user site, no PYTHON* variables, no script directory
    on the path): it imports the standard library only."""
    return [sys.executable, "-I", str(Path(__file__).resolve())]


def command(name: str) -> list[str]:
    """The command of agent ``name`` (one of ``AGENTS``), as both bots start it."""
    if name == "bench":
        return agent_argv()
    if name != "scripted":
        raise ValueError(f"no such agent: {name!r} (there are {', '.join(AGENTS)})")
    # Imported here: this file also runs as the agent, in isolated mode, where `tests` is not importable.
    from tests.conftest import FAKE_AGENT_PATH

    return [sys.executable, str(FAKE_AGENT_PATH), "--close"]


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            self.error["data"] = data


class Out(asyncio.Protocol):
    """stdout: frames are gathered and written once per round of the event loop; ``drain`` waits while
    the pipe is full."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.WriteTransport | None = None
        self.pending: list[bytes] = []
        self.paused: asyncio.Future[None] | None = None
        self.closed: asyncio.Future[None] = self.loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self.paused = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.paused is not None and not self.paused.done():
            self.paused.set_result(None)
        self.paused = None

    def send(self, line: bytes) -> None:
        if not self.pending:
            self.loop.call_soon(self.flush)
        self.pending.append(line)

    def obj(self, obj: dict[str, Any]) -> None:
        self.send(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")

    def flush(self) -> None:
        if self.pending and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(self.pending))
        self.pending.clear()

    async def drain(self) -> None:
        if self.paused is not None:
            await self.paused

    async def close(self) -> None:
        self.flush()
        if self.transport is not None:
            self.transport.close()
            async with asyncio.timeout(5):
                await self.closed


class Session:
    """A session: its id as JSON (copied into every chunk) and its running prompt."""

    def __init__(self, sid: str) -> None:
        self.id = sid
        self.quoted = json.dumps(sid)
        self.turn: asyncio.Task[None] | None = None
        self.cancelled = False  # set by session/cancel or session/close: the turn answers "cancelled"
        self.closed = False


class Agent:
    """The agent's state and its handlers; ``serve`` reads stdin until EOF."""

    def __init__(self, out: Out, tasks: asyncio.TaskGroup) -> None:
        self.out = out
        self.tasks = tasks
        self.sessions: dict[str, Session] = {}

    def answer(self, req_id: object, result: object) -> None:
        self.out.obj({"jsonrpc": "2.0", "id": req_id, "result": result})

    def fail(self, req_id: object, error: RpcError) -> None:
        self.out.obj({"jsonrpc": "2.0", "id": req_id, "error": error.error})

    async def serve(self, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # a line over the limit: its rest is dropped by the reader
                self.fail(None, RpcError(-32700, "Parse error"))
                continue
            if not line:
                break
            self.handle(line)
        for session in self.sessions.values():  # stdin closed: running prompts end unanswered
            if session.turn is not None:
                session.turn.cancel()

    def handle(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            msg = json.loads(line)
        except ValueError:
            self.fail(None, RpcError(-32700, "Parse error"))
            return
        if not isinstance(msg, dict):
            self.fail(None, RpcError(-32600, "Invalid Request"))
            return
        method, params = msg.get("method"), msg.get("params")
        params = params if isinstance(params, dict) else {}
        if not isinstance(method, str):
            if "id" in msg and ("result" in msg or "error" in msg):
                return  # an answer to a request this agent never sends
            self.fail(msg.get("id"), RpcError(-32600, "Invalid Request"))
        elif "id" not in msg:
            if method == "session/cancel":
                self.cancel(self.sessions.get(str(params.get("sessionId"))))
        else:
            try:
                self.request(msg["id"], method, params)
            except RpcError as exc:
                self.fail(msg["id"], exc)

    def request(self, req_id: object, method: str, params: dict[str, Any]) -> None:
        if method == "session/prompt":
            session = self.open_session(params)
            if session.turn is not None:
                raise RpcError(-32603, "Prompt already in progress", "Prompt already in progress")
            session.cancelled = False
            session.turn = self.tasks.create_task(self.prompt(session, req_id, params.get("prompt")),
                                                  name=f"prompt {session.id}")
        elif method == "initialize":
            self.answer(req_id, {"protocolVersion": PROTOCOL_VERSION, "agentCapabilities": CAPABILITIES,
                                 "agentInfo": INFO, "authMethods": []})
        elif method == "session/new":
            session = Session(str(uuid.uuid4()))
            self.sessions[session.id] = session
            self.answer(req_id, {"sessionId": session.id, "modes": {"currentModeId": "default",
                                                                    "availableModes": MODES}})
        elif method in ("session/close", "session/load"):
            known = self.sessions.get(str(params.get("sessionId")))
            if known is None:
                raise RpcError(-32002, "Resource not found", {"uri": params.get("sessionId")})
            if method == "session/close":
                self.cancel(known)
            known.closed = method == "session/close"
            self.answer(req_id, {} if known.closed else {"modes": {"currentModeId": "default",
                                                                   "availableModes": MODES}})
        else:
            raise RpcError(-32601, "Method not found", method)

    def open_session(self, params: dict[str, Any]) -> Session:
        session = self.sessions.get(str(params.get("sessionId")))
        if session is None or session.closed:
            raise RpcError(-32002, "Resource not found", {"uri": params.get("sessionId")})
        return session

    @staticmethod
    def cancel(session: Session | None) -> None:
        if session is not None and session.turn is not None and not session.cancelled:
            session.cancelled = True
            session.turn.cancel()

    async def prompt(self, session: Session, req_id: object, blocks: object) -> None:
        """Run one prompt's script and answer it; a cancel from the client answers ``cancelled``."""
        texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"] \
            if isinstance(blocks, list) else []
        text = "\n".join(t for t in texts if isinstance(t, str))
        try:
            result = await self.script(session, text)
        except asyncio.CancelledError:
            if not session.cancelled:
                raise  # stdin closed: no one to answer
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # this cancel is answered, not propagated
            result = {"stopReason": "cancelled"}
        except RpcError as exc:
            self.fail(req_id, exc)
            return
        except (ValueError, IndexError, TypeError) as exc:
            self.fail(req_id, RpcError(-32602, "Invalid params", f"bench agent: bad script: {exc}"))
            return
        finally:
            session.turn = None
        self.answer(req_id, result)

    async def script(self, session: Session, text: str) -> dict[str, Any]:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines or lines[0].split(None, 1)[0] not in VERBS:
            self.chunk(session, f"echo: {text}")
            return {"stopReason": "end_turn"}
        for line in lines:
            verb, _, rest = line.strip().partition(" ")
            if verb == "text":
                self.chunk(session, rest)
                await self.out.drain()
            elif verb == "sleep":
                await asyncio.sleep(float(rest))
            elif verb == "chunks":
                for i in range(int(rest)):
                    self.chunk(session, f"w{i} ")
                await self.out.drain()
            elif verb == "hang":
                await asyncio.get_running_loop().create_future()
            elif verb == "stop":
                return {"stopReason": rest.strip()}
            else:
                raise RpcError(-32602, "Invalid params", f"bench agent: unknown verb in {line!r}")
        return {"stopReason": "end_turn"}

    def chunk(self, session: Session, text: str) -> None:
        self.out.send((_CHUNK % (session.quoted, json.dumps(text, ensure_ascii=False))).encode())


async def amain() -> None:
    """Serve stdin until EOF, then write what is left and close stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    _, out = await loop.connect_write_pipe(Out, sys.stdout)
    try:
        async with asyncio.TaskGroup() as tasks:
            await Agent(out, tasks).serve(reader)
    finally:
        await out.close()


def main() -> None:
    """Run the agent (stdin and stdout must be pipes, as an ACP client starts it)."""
    asyncio.run(amain())


if __name__ == "__main__":
    main()
