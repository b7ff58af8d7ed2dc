"""The agent's child process: spawn with a trimmed environment, stderr ring, shutdown ladder."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import sys
from collections import deque

from core.acp.client import AcpError
from core.acp.spec import AgentSpec
from core.redact import mask_args

__all__ = ["AgentProcess", "StderrRing", "child_env"]

log = logging.getLogger("acp_relay.acp.process")

_KEPT_ENV = ("PATH", "HOME", "USER", "LANG", "TERM", "SHELL")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
INSTALL_HINTS = {
    "kiro-cli": "install Kiro CLI from kiro.dev and run `kiro-cli login`",
    "claude-agent-acp": "npm install -g @agentclientprotocol/claude-agent-acp (the package was called "
    "@zed-industries/claude-agent-acp before)",
    "codex-acp": "npm install -g @agentclientprotocol/codex-acp (the package was called "
    "@zed-industries/codex-acp before)",
}


def _die_with_parent() -> None:
    """In the child, before exec: the kernel sends SIGKILL when the relay dies, even by SIGKILL.

    Agents run in their own session (so a terminal's Ctrl-C reaches only the relay) and several
    ignore stdin EOF, so without this a killed relay would leave them running.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def child_env(spec: AgentSpec) -> dict[str, str]:
    """PATH, HOME, USER, LANG, TERM, SHELL and XDG_* from our environment, plus the agent's ``env``."""
    env = {k: v for k, v in os.environ.items() if k in _KEPT_ENV or k.startswith("XDG_")}
    env.update(spec.env)
    return env


class StderrRing:
    """The last lines the agent wrote to stderr. Read continuously so the pipe never fills."""

    def __init__(self, max_lines: int = 200, max_line: int = 2000) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._max_line = max_line
        self.bytes_read = 0

    def add(self, raw: bytes) -> None:
        """Keep one line, decoded leniently and cut to ``max_line`` characters."""
        self._lines.append(raw.decode(errors="replace").rstrip()[: self._max_line])

    def tail(self, lines: int = 5) -> str:
        """The last ``lines`` non-blank lines, for error messages."""
        return "\n".join([line for line in self._lines if line][-lines:])

    def lines(self) -> list[str]:
        """Every kept line, oldest first."""
        return list(self._lines)

    async def pump(self, stream: asyncio.StreamReader) -> None:
        """Read ``stream`` until EOF, line by line; an unterminated line keeps only its last 8 KiB."""
        partial = b""
        while chunk := await stream.read(65536):
            self.bytes_read += len(chunk)
            parts = (partial + chunk).split(b"\n")
            partial = parts.pop()[-8192:]
            for part in parts:
                self.add(part)
        if partial:
            self.add(partial)


class AgentProcess:
    """A spawned agent. ``stop()`` climbs the ladder: close stdin, SIGTERM, SIGKILL."""

    def __init__(self, proc: asyncio.subprocess.Process, spec: AgentSpec, argv: list[str]) -> None:
        self.proc = proc
        self.spec = spec
        self.argv = argv
        self.stderr = StderrRing()
        assert proc.stderr is not None
        self._stderr_task = asyncio.create_task(self.stderr.pump(proc.stderr), name=f"acp-stderr-{spec.name}")

    @classmethod
    async def spawn(cls, spec: AgentSpec) -> AgentProcess:
        """Start the agent in its own process group; a missing command or cwd raises a non-transient AcpError."""
        env = child_env(spec)
        resolved = shutil.which(spec.command, path=env.get("PATH"))  # the PATH the agent will have
        if resolved is None:
            hint = INSTALL_HINTS.get(os.path.basename(spec.command), "")
            raise AcpError(
                f"the agent command {spec.command!r} was not found on PATH (agents.{spec.name}.command)",
                transient=False,
                data={"kind": "agent_missing", "command": spec.command, "agent": spec.name, "hint": hint},
            )
        cwd = spec.expanded_cwd()
        if not cwd.is_dir():
            raise AcpError(
                f"the working directory {str(cwd)!r} does not exist (agents.{spec.name}.cwd)",
                transient=False, data={"kind": "cwd_missing", "cwd": str(cwd), "agent": spec.name},
            )
        argv = [resolved, *spec.args]
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=str(cwd), env=env,
            start_new_session=True,  # our own process group: a Ctrl-C in the terminal reaches us, not it
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        log.info("started agent %s (pid %d): %s", spec.name, proc.pid, " ".join(mask_args(argv)))
        return cls(proc, spec, argv)

    @property
    def pid(self) -> int:
        """The process id, which is also its process group id (the agent runs in its own session)."""
        return self.proc.pid

    @property
    def alive(self) -> bool:
        """True until the process's exit has been seen."""
        return self.proc.returncode is None

    async def wait_exit(self, timeout_s: float) -> int | None:
        """The exit code, or None when the process is still running after ``timeout_s``."""
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(self.proc.wait(), timeout_s)
        return None

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    async def stop(self, grace_s: float = 0.5, term_s: float = 3.0) -> int | None:
        """Close stdin, wait; SIGTERM, wait; SIGKILL. Some agents ignore EOF."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        code = await self.wait_exit(grace_s) if self.alive else self.proc.returncode
        if code is None:
            log.info("agent %s ignored stdin EOF; sending SIGTERM", self.spec.name)
            self._signal(signal.SIGTERM)
            code = await self.wait_exit(term_s)
        if code is None:
            log.warning("agent %s ignored SIGTERM; sending SIGKILL", self.spec.name)
            self._signal(signal.SIGKILL)
            code = await self.proc.wait()
        self._signal(signal.SIGKILL)  # leftovers of its process group (tools it started)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
        self._stderr_task.cancel()
        return code
