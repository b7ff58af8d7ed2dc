"""The peer tier's building blocks: agent specs wired to the model-API mock, approvers, time guard."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from core.acp import AgentSpec
from core.acp.types import PermissionRequest
from tests.fakes.model_api import ModelApiMock
from tests.peers.install import PeerPaths

__all__ = [
    "CODEX_MODEL",
    "MISSING_TOOLS",
    "PEER_TEST_TIMEOUT_S",
    "PROMPT_TIMEOUT_S",
    "REQUEST_TIMEOUT_S",
    "SKIP_REASON",
    "Peer",
    "RecordingApprover",
    "claude_peer",
    "codex_peer",
    "within",
]

MISSING_TOOLS = [name for name in ("node", "npm") if shutil.which(name) is None]
SKIP_REASON = "peer tier skipped: node/npm not found"

#: Hard ceiling for one peer test, whatever hangs: a stuck agent cannot stall CI.
PEER_TEST_TIMEOUT_S = 45.0
#: Budget for one JSON-RPC request (initialize, session/new) and for one prompt.
REQUEST_TIMEOUT_S = 30.0
PROMPT_TIMEOUT_S = 30.0
#: codex-acp streams a warning chunk for model names it has no metadata for; use one it knows.
CODEX_MODEL = "gpt-5.4-mini"

T = TypeVar("T")


async def within(body: Coroutine[Any, Any, T], seconds: float = PEER_TEST_TIMEOUT_S) -> T:
    """Run a test body under a hard timeout; on expiry the body is cancelled (its runtime closed)."""
    try:
        return await asyncio.wait_for(body, seconds)
    except TimeoutError:
        pytest.fail(f"peer test did not finish within {seconds:g}s")


@dataclass
class Peer:
    """One real agent wired to this test's mock, HOME and cwd."""

    name: str
    spec: AgentSpec
    cwd: Path
    home: Path
    mock: ModelApiMock

    @property
    def marker(self) -> Path:
        """The file the mock's ``tool`` scenario makes the agent write (``echo ... > marker.txt``)."""
        return self.cwd / "marker.txt"


@dataclass
class RecordingApprover:
    """An approver answering one fixed option kind and remembering what it was asked."""

    answer: str
    asked: list[PermissionRequest] = field(default_factory=list)

    async def __call__(self, request: PermissionRequest) -> str:
        self.asked.append(request)
        return self.answer


def _dirs(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    home, cwd = tmp_path / "home", tmp_path / "work"
    xdg = {
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
    }
    for d in (home, cwd, *xdg.values()):
        d.mkdir(parents=True, exist_ok=True)
    return home, cwd, {k: str(v) for k, v in xdg.items()}


def claude_peer(paths: PeerPaths, mock: ModelApiMock, tmp_path: Path, *, tool_gate: str = "ask") -> Peer:
    """claude-agent-acp (``node dist/index.js``) on the mock's Anthropic Messages API."""
    home, cwd, xdg = _dirs(tmp_path)
    env = {
        "HOME": str(home),
        **xdg,
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": mock.base_url,
        "CLAUDE_CODE_MAX_RETRIES": "0",
        # Offline: no updater, no telemetry or error reporting, no other non-model traffic.
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    spec = AgentSpec(
        name="claude",
        command="node",
        args=(str(paths.claude_js),),
        env=env,
        cwd=str(cwd),
        backend="claude",
        tool_gate=tool_gate,
    )
    return Peer("claude", spec, cwd, home, mock)


def codex_peer(paths: PeerPaths, mock: ModelApiMock, tmp_path: Path, *, tool_gate: str = "ask") -> Peer:
    """codex-acp (native binary) on the mock's OpenAI Responses API, via a ``CODEX_HOME`` config."""
    home, cwd, xdg = _dirs(tmp_path)
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model_provider = "mock"\n'
        f'model = "{CODEX_MODEL}"\n'
        "\n"
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{mock.openai_base_url}"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )
    env = {"HOME": str(home), **xdg, "CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "test-key"}
    spec = AgentSpec(
        name="codex",
        command=str(paths.codex_bin),
        env=env,
        cwd=str(cwd),
        backend="codex",
        tool_gate=tool_gate,
    )
    return Peer("codex", spec, cwd, home, mock)
