"""One agent process serving several ACP sessions (one runtime per (agent, cwd))."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from core.acp.client import AcpAuthRequired, AcpError, AcpProcessDied, AcpPromptBusy
from core.acp.connection import DEFAULT_LINE_CAP, JsonRpcConnection, RpcError
from core.acp.listing import SessionListing, read_listing
from core.acp.process import AgentProcess, child_env
from core.acp.session import AcpSession
from core.acp.session_handle import AcpRuntimeDead, AcpRuntimeError, AcpWorkspaceBindingError
from core.acp.spec import AgentSpec, detect_backend, resolve_cwd
from core.acp.tool_gate import check_routable
from core.failures import error_from_rpc, login_command

__all__ = ["CLIENT_INFO", "PROTOCOL_VERSION", "AcpRuntime", "AcpWorkspaceBindingError"]

log = logging.getLogger("acp_relay.acp.runtime")

CLIENT_INFO = {"name": "acp-relay", "title": "acp-relay", "version": "0.1.0"}
PROTOCOL_VERSION = 1
#: Updates kept for a session whose answer is still being read: sessions, and frames each.
_EARLY_SESSIONS, _EARLY_FRAMES = 4, 16
#: ``session/close`` requests in flight at once when a sweep lets many idle sessions go.
_CLOSING_AT_ONCE = 32
_NOT_LOGGED_IN = re.compile(r"not logged in|please log ?in|login required", re.I)


class AcpRuntime:
    """A running agent: its process, its JSON-RPC connection and the sessions it serves."""

    def __init__(
        self, spec: AgentSpec, process: AgentProcess, *, request_timeout_s: float, line_cap: int,
        on_frame_sent: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        self.spec = spec
        self.process = process
        self.request_timeout_s = request_timeout_s
        self.cwd = str(spec.expanded_cwd())
        self.sessions: dict[str, AcpSession] = {}
        self._unknown_methods: set[str] = set()  # agent methods already logged as unknown
        self._early: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # session id -> updates before its answer
        self.init_result: dict[str, Any] = {}
        self.backend = spec.backend or detect_backend(spec.command, spec.args)
        self.last_used = time.monotonic()
        assert process.proc.stdout is not None and process.proc.stdin is not None
        self.conn = JsonRpcConnection(
            process.proc.stdout, process.proc.stdin, on_notification=self._on_notification,
            on_request=self._on_request, line_cap=line_cap, on_frame_sent=on_frame_sent)
        self.death: AcpRuntimeDead | None = None
        self.closing = False
        self._reader_task = asyncio.create_task(self._supervise(), name=f"acp-reader-{spec.name}")

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    async def start(
        cls, spec: AgentSpec, *, request_timeout_s: float = 30.0, line_cap: int = DEFAULT_LINE_CAP,
        on_frame_sent: Callable[[dict[str, Any]], None] | None = None,
    ) -> AcpRuntime:
        """Spawn the agent, ``initialize`` it and ``authenticate`` when it asks for an env var we have."""
        check_routable(spec)
        process = await AgentProcess.spawn(spec)
        runtime = cls(spec, process, request_timeout_s=request_timeout_s, line_cap=line_cap,
                      on_frame_sent=on_frame_sent)
        try:
            await runtime._initialize()
        except BaseException:
            await runtime.close()
            raise
        return runtime

    async def _supervise(self) -> None:
        try:
            await self.conn.run()
        except Exception:  # the reader's funnel: logged here, once; every waiter hears of the death below
            log.exception("reader of agent %s failed", self.spec.name)
            await self.process.stop()  # what it writes can no longer be read: it is of no more use
        code = await self.process.wait_exit(2.0)
        self.death = AcpRuntimeDead(
            f"agent {self.spec.name} exited" + (f" with code {code}" if code is not None else ""),
            exit_code=code, stderr_tail=self.process.stderr.tail())
        self.conn.close(self.death)
        for session in list(self.sessions.values()):
            session.runtime_died(self.death)

    async def _initialize(self) -> None:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            # Notices and compaction updates are shown as notice lines (without ``session.notices``,
            # claude-agent-acp writes its notices into the answer as bold lines); forms and links to open
            # are shown to the person (``core.engine.form_prompt``).
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False,
                                   "session": {"notices": {}, "compaction": {}},
                                   "elicitation": {"form": {}, "url": {}}},
            "clientInfo": CLIENT_INFO,
        }
        try:
            result = await self.request("initialize", params)
        except AcpRuntimeDead as exc:
            await self._raise_startup_death(exc)
        self.init_result = result if isinstance(result, dict) else {}
        version = self.init_result.get("protocolVersion")
        if version != PROTOCOL_VERSION:  # the agent answers with the version it will speak
            raise AcpError(f"agent {self.spec.name} speaks ACP protocol version {version!r}", transient=False,
                           data={"kind": "protocol_version", "agent": self.spec.name, "version": version,
                                 "supported": PROTOCOL_VERSION})
        agent_name = str((self.init_result.get("agentInfo") or {}).get("name", ""))
        if not self.spec.backend:
            self.backend = detect_backend(self.spec.command, self.spec.args, agent_name)
        await self._authenticate()

    async def _raise_startup_death(self, exc: AcpRuntimeDead) -> None:
        await self.process.wait_exit(2.0)
        lines = self.process.stderr.lines()
        login = next((ln.strip() for ln in reversed(lines) if _NOT_LOGGED_IN.search(ln)), "")
        if login:
            raise AcpAuthRequired(login, agent_line=login,
                                  command=login_command(self.backend, self.spec.command)) from exc
        raise AcpProcessDied(
            f"agent {self.spec.name} exited before answering initialize",
            exit_code=self.process.proc.returncode, stderr_tail=self.process.stderr.tail()) from exc

    async def _authenticate(self) -> None:
        env = child_env(self.spec)  # what the agent itself sees, not our own environment
        for method in self.init_result.get("authMethods") or []:
            if not isinstance(method, dict) or method.get("type") != "env_var":
                continue
            names = [v.get("name") for v in method.get("vars", []) if isinstance(v, dict)]
            if names and all(isinstance(n, str) and env.get(n) for n in names):
                await self.request("authenticate", {"methodId": method.get("id")})
                return

    async def close(self) -> None:
        """Stop the process (stdin EOF, SIGTERM, SIGKILL) and fail whatever still waits on it."""
        self.closing = True  # from now on nobody picks this runtime up (the reaper may be closing it)
        for session in list(self.sessions.values()):
            await session.cancel(wait_s=1.0)
        await self.process.stop()
        if not self._reader_task.done():
            await asyncio.wait({self._reader_task}, timeout=3.0)
        self._reader_task.cancel()

    async def __aenter__(self) -> AcpRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- properties ------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """No death recorded, the process still running and the connection open."""
        return self.death is None and not self.closing and self.process.alive and not self.conn.closed

    @property
    def agent_name(self) -> str:
        """``agentInfo.name`` from the agent's answer to ``initialize``."""
        info = self.init_result.get("agentInfo")
        return str(info.get("name") or "") if isinstance(info, dict) else ""

    @property
    def pid(self) -> int:
        """The agent's process id (also its process group id)."""
        return self.process.pid

    @property
    def accepts_images(self) -> bool:
        """``agentCapabilities.promptCapabilities.image``: image blocks may be sent."""
        caps = self.init_result.get("agentCapabilities") or {}
        prompt = caps.get("promptCapabilities") if isinstance(caps, dict) else None
        return bool(isinstance(prompt, dict) and prompt.get("image"))

    @property
    def steering(self) -> bool:
        """The agent takes ``_session/steering`` (a message added to the running turn): claude-agent-acp
        0.101 and codex-acp 2.6 say so in ``initialize`` as ``_meta.steering.supported``."""
        meta = self.init_result.get("_meta")
        steering = meta.get("steering") if isinstance(meta, dict) else None
        return isinstance(steering, dict) and steering.get("supported") is True

    @property
    def load_supported(self) -> bool:
        """``agentCapabilities.loadSession``: ``session/load`` may resume an earlier session."""
        caps = self.init_result.get("agentCapabilities") or {}
        return bool(isinstance(caps, dict) and caps.get("loadSession"))

    def _session_capability(self, name: str) -> bool:
        caps = self.init_result.get("agentCapabilities") or {}
        session = caps.get("sessionCapabilities") if isinstance(caps, dict) else None
        return isinstance(session, dict) and isinstance(session.get(name), dict)

    @property
    def list_supported(self) -> bool:
        """``sessionCapabilities.list``: ``session/list`` names the agent's sessions."""
        return self._session_capability("list")

    @property
    def resume_supported(self) -> bool:
        """``sessionCapabilities.resume``: ``session/resume`` reattaches a session without replaying it."""
        return self._session_capability("resume")

    @property
    def close_supported(self) -> bool:
        """``sessionCapabilities.close``: ``session/close`` lets the agent free a session."""
        return self._session_capability("close")

    @property
    def busy(self) -> bool:
        """A turn runs, or a request (a session/load replaying history, say) awaits its answer."""
        return self.conn.pending > 0 or any(s.busy for s in self.sessions.values())

    def stderr_tail(self, lines: int = 5) -> str:
        """The agent's last ``lines`` stderr lines, for error reports."""
        return self.process.stderr.tail(lines)

    # -- requests --------------------------------------------------------------------------

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None,
                      idle_key: str | None = None, models: tuple[str, ...] = ()) -> Any:
        """A request with its own budget; a JSON-RPC error becomes the classified AcpError."""
        if self.death is not None:
            raise self.death
        self.last_used = time.monotonic()
        budget = self.request_timeout_s if timeout_s is None else timeout_s
        try:
            return await self.conn.request(method, params, timeout_s=budget, idle_key=idle_key)
        except RpcError as exc:
            raise self._classified(exc, models) from exc

    def send_request(self, method: str, params: Any) -> tuple[int, asyncio.Future[Any]]:
        """Send a request without waiting for it (``JsonRpcConnection.send_request``): its id and the
        future of its raw answer (``answer`` reads it). A dead agent's future holds AcpRuntimeDead."""
        self.last_used = time.monotonic()
        try:
            if self.death is not None:
                raise self.death
            return self.conn.send_request(method, params)
        except AcpRuntimeDead as exc:
            failed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            failed.set_exception(exc)
            return -1, failed

    def answer(self, future: asyncio.Future[Any], *, models: tuple[str, ...] = ()) -> Any:
        """The result of a request ``send_request`` sent (done): a JSON-RPC error becomes the
        classified AcpError, as ``request`` raises it."""
        try:
            return future.result()
        except RpcError as exc:
            raise self._classified(exc, models) from exc

    def _classified(self, exc: RpcError, models: tuple[str, ...]) -> AcpError:
        """A JSON-RPC error answer as the AcpError it means (``core/failures.py`` classifies it)."""
        return error_from_rpc(exc.to_dict(), backend=self.backend, advertised_models=models)

    def _check_cwd(self, cwd: str | None) -> None:
        if cwd is not None and str(resolve_cwd(cwd)) != self.cwd:
            raise AcpWorkspaceBindingError(f"agent {self.spec.name} runs in {self.cwd}, not in {cwd}")

    async def new_session(self, cwd: str | None = None) -> AcpSession:
        """``session/new`` in this runtime's cwd, then leave a mode the tool gate must not allow."""
        self._check_cwd(cwd)
        result = await self.request("session/new", {"cwd": self.cwd, "mcpServers": []})
        session = AcpSession(self, str(result["sessionId"]), result)
        self._register(session)
        await session.prepare()
        return session

    async def load_session(self, session_id: str, *, cwd: str | None = None,
                           meta: dict[str, Any] | None = None) -> AcpSession:
        """``session/load``: history replays before the answer, so the budget restarts per frame."""
        self._check_cwd(cwd)
        if not self.load_supported:
            raise AcpError("this agent cannot resume sessions", rpc_code=-32601, transient=False)
        existing = self.sessions.get(session_id)  # reloading one served here keeps its live handle
        if existing is not None and existing.busy:
            raise AcpPromptBusy("a prompt is in flight on this session; it cannot be reloaded now")
        session = existing or AcpSession(self, session_id, {}, loading=True)
        session.loading = True
        self.sessions[session_id] = session
        params: dict[str, Any] = {"sessionId": session_id, "cwd": self.cwd, "mcpServers": []}
        if meta:
            params["_meta"] = meta
        try:
            result = await self.request("session/load", params, idle_key=session_id)
        except BaseException:
            session.loading = False
            if existing is None:
                self.sessions.pop(session_id, None)
            raise
        session.loaded(result if isinstance(result, dict) else {})
        await session.prepare()
        return session

    async def resume_session(self, session_id: str, *, timeout_s: float | None = None) -> AcpSession:
        """``session/resume``: reattach a session the agent keeps, with no history replayed."""
        existing = self.sessions.get(session_id)
        if existing is not None:
            return existing
        result = await self.request("session/resume", {"sessionId": session_id, "cwd": self.cwd, "mcpServers": []},
                                    timeout_s=timeout_s)
        session = AcpSession(self, session_id, result if isinstance(result, dict) else {})
        self._register(session)
        await session.prepare()
        return session

    async def list_sessions(self, cursor: str | None = None) -> tuple[list[SessionListing], str | None]:
        """``session/list`` for this runtime's folder: the sessions (newest first) and the next page's cursor."""
        params: dict[str, Any] = {"cwd": self.cwd}
        if cursor:
            params["cursor"] = cursor
        return read_listing(await self.request("session/list", params))

    async def close_session(self, session_id: str) -> None:
        """``session/close`` where the agent offers it (it frees the session); the relay stops routing it."""
        self.forget(session_id)
        if self.close_supported and self.alive:
            await self.request("session/close", {"sessionId": session_id})

    def forget(self, session_id: str) -> None:
        """Stop routing frames to a session (its conversation let go of it); the agent is not told."""
        self.sessions.pop(session_id, None)

    async def close_idle_sessions(self, idle_s: float, now: float | None = None) -> int:
        """Let go of the sessions nothing used for ``idle_s``; returns how many.

        The agent is told with ``session/close`` where it offers that, so it frees them too. The next
        message of their conversation reattaches with ``session/load`` (its conversation finds the
        session gone from ``sessions``). An agent that cannot load a session keeps all of its sessions:
        letting one go would lose the conversation's context.
        """
        if not self.load_supported or not self.alive:
            return 0
        now = time.monotonic() if now is None else now
        idle = [s for s in self.sessions.values() if not s.busy and not s.loading and now - s.last_used >= idle_s]
        for session in idle:
            del self.sessions[session.session_id]
        if idle and self.close_supported:
            for start in range(0, len(idle), _CLOSING_AT_ONCE):
                await asyncio.gather(*(self._close_session(s.session_id) for s in idle[start:start + _CLOSING_AT_ONCE]))
        if idle:
            log.info("let go of %d idle sessions of agent %s", len(idle), self.spec.name)
        return len(idle)

    async def _close_session(self, session_id: str) -> None:
        """``session/close``; a refusal or a dead agent is only logged (the handle is gone already). Sent on
        the connection directly: a sweep is not a use, so it does not keep the runtime from its own reaping."""
        try:
            await self.conn.request("session/close", {"sessionId": session_id}, timeout_s=self.request_timeout_s)
        except (RpcError, AcpRuntimeError) as exc:
            log.debug("session/close of %s on agent %s: %r", session_id, self.spec.name, exc)

    # -- frames from the agent -------------------------------------------------------------

    def _unknown_method(self, method: str, what: str) -> None:
        """A method this relay does not know (qwen's ``qwen/notify/session/mode-update``): logged
        once per method at debug, by name; a request is still answered -32601."""
        if method not in self._unknown_methods:
            self._unknown_methods.add(method)
            log.debug("ignoring the agent's %s %s: a method this relay does not know", what, method)

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "elicitation/complete":  # it names the question, not the session
            eid = params.get("elicitationId") if isinstance(params, dict) else None
            if not (isinstance(eid, str) and any(s.elicitation_completed(eid) for s in self.sessions.values())):
                log.debug("elicitation/complete for a question no one is being asked: ignored")
            return
        if method != "session/update" and not method.startswith("_"):
            self._unknown_method(method, "notification")
            return
        if not isinstance(params, dict):
            return
        sid = str(params.get("sessionId", ""))
        session = self.sessions.get(sid)
        if session is None:
            # The answer to session/new (or /resume) is read first, but the session is registered only
            # when its caller runs again: updates the agent sends right after it (its commands) wait.
            early = self._early.setdefault(sid, [])
            if len(early) < _EARLY_FRAMES:
                early.append((method, params))
            while len(self._early) > _EARLY_SESSIONS:
                self._early.pop(next(iter(self._early)))
            log.debug("%s for a session this runtime does not serve (yet)", method)
            return
        session.on_frame(method, params)

    def _register(self, session: AcpSession) -> None:
        """Serve ``session`` from now on, with the updates that came for it before its answer was read."""
        self.sessions[session.session_id] = session
        for method, params in self._early.pop(session.session_id, []):
            session.on_frame(method, params)

    async def _on_request(self, method: str, params: Any) -> Any:
        if method == "session/request_permission" and isinstance(params, dict):
            session = self.sessions.get(str(params.get("sessionId", "")))
            if session is not None:
                return await session.on_permission(params)
            return {"outcome": {"outcome": "cancelled"}}
        if method == "elicitation/create" and isinstance(params, dict):
            # A request-scoped form (no session: during start-up) has nobody to ask: declined.
            session = self.sessions.get(str(params.get("sessionId", "")))
            return await session.on_elicitation(params) if session is not None else {"action": "decline"}
        self._unknown_method(method, "request")  # e.g. qwen's craft/drainMidTurnQueue
        raise RpcError(-32601, f"Method not found: {method}")
