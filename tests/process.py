"""``acp-relay`` as a real process, for the tests of faults that are about a start, a stop or a kill.

``relay_processes`` (a fixture: import it into the test module) starts ``acp-relay <command>`` with a
config the test writes (``write_config``: the scripted agent plus the surfaces given), in an
environment of its own (no tokens or proxies from the developer's shell, the log file under the
test's directory), and kills whatever is still running at the end. Waiting is ``until`` with hang
guards only.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKE_AGENT_PATH

__all__ = ["HANG_GUARD_S", "RelayProcess", "Spawn", "relay_processes", "write_config"]

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).with_name("acp-relay")
HANG_GUARD_S = 40.0
_OURS = ("ACP_", "XDG_", "TELEGRAM_", "DISCORD_", "SLACK_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def write_config(tmp: Path, surfaces: dict[str, Any], **sections: Any) -> Path:
    """A config with the scripted agent (recording to ``tmp/record.jsonl``) and ``surfaces`` (the
    dashboard off unless given); ``sections`` are merged in at the top level."""
    args = [str(FAKE_AGENT_PATH), "--record", str(tmp / "record.jsonl"), "--state-dir", str(tmp / "agent-state")]
    (tmp / "work").mkdir(exist_ok=True)
    config: dict[str, Any] = {
        "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(tmp / "work")}},
        "store": {"path": str(tmp / "relay.db")},
        "engine": {"edit_interval_s": 0.05},
        "surfaces": {"dashboard": {"enabled": False}, **surfaces},
    }
    for name, values in sections.items():
        config.setdefault(name, {}).update(values)
    path = tmp / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


class RelayProcess:
    """One ``acp-relay`` process; its output is read once it has exited."""

    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log_path = log
        self.stdout = ""
        self.stderr = ""

    async def exited(self, timeout: float = HANG_GUARD_S) -> int:
        """Wait for the exit (a hang guard only); keeps stdout and stderr."""
        async with asyncio.timeout(timeout):
            out, err = await self.proc.communicate()
        self.stdout, self.stderr = out.decode(), err.decode()
        assert self.proc.returncode is not None
        return self.proc.returncode

    async def stop(self) -> int:
        """SIGTERM, then the exit code."""
        if self.proc.returncode is None:
            self.proc.terminate()
        return await self.exited()

    def kill(self) -> None:
        """``kill -9``: nothing runs after this."""
        if self.proc.returncode is None:
            self.proc.kill()

    def log(self) -> str:
        """The relay's log file (INFO and above, redacted), as far as it got."""
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""


Spawn = Callable[..., Awaitable[RelayProcess]]


@pytest.fixture
async def relay_processes(tmp_path: Path) -> AsyncIterator[Spawn]:
    """``await spawn(config, "run", TELEGRAM_BOT_TOKEN=...)``: a started ``acp-relay`` process."""
    started: list[RelayProcess] = []

    async def spawn(config: Path, command: str = "run", *args: str, **env: str) -> RelayProcess:
        environ = {k: v for k, v in os.environ.items() if not k.upper().startswith(_OURS)}
        environ.update({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": str(ROOT),
                        "PYTHONUNBUFFERED": "1", **env})  # env may put more on PYTHONPATH
        proc = await asyncio.create_subprocess_exec(
            str(CLI), command, "--config", str(config), *args, env=environ, cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        relay = RelayProcess(proc, tmp_path / "state" / "acp-relay" / "acp-relay.log")
        started.append(relay)
        return relay

    yield spawn
    for relay in started:
        if relay.proc.returncode is None:
            relay.proc.kill()
            await relay.proc.communicate()
