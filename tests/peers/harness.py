"""The peer tier's building blocks: agents wired to the model-API mock, recorded; approvers; time guard.

Every agent runs under ``record.py``, which writes the session as a capture (the format of
``tests/fixtures/captures``): the tests count the prompts the relay sent from it (what the relay
decided, whatever the agent did with its model calls), and with ``ACP_RELAY_RECORD_DIR`` set each
test's capture is kept there, named ``<agent>-<test>.jsonl``, to refresh the replay fixtures.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from core.acp import AgentSpec
from core.acp.types import PermissionRequest
from tests.fakes.model_api import ModelApiMock
from tests.peers.install import PACKAGES, Package, PeerPaths

__all__ = [
    "CLAUDE_KEYS",
    "CODEX_KEYS",
    "MISSING_TOOLS",
    "OTHER_KEYS",
    "PEER_KEYS",
    "PEER_TEST_TIMEOUT_S",
    "PROMPT_TIMEOUT_S",
    "REQUEST_TIMEOUT_S",
    "SKIP_REASON",
    "Peer",
    "RecordingApprover",
    "build_peer",
    "within",
]

MISSING_TOOLS = [name for name in ("node", "npm") if shutil.which(name) is None]
SKIP_REASON = "peer tier skipped: node/npm not found"
RECORD = Path(__file__).resolve().parent / "record.py"

#: Hard ceiling for one peer test, whatever hangs: a stuck agent cannot stall CI.
PEER_TEST_TIMEOUT_S = 60.0
#: Budget for one JSON-RPC request (initialize, session/new) and for one prompt.
REQUEST_TIMEOUT_S = 30.0
PROMPT_TIMEOUT_S = 30.0

CLAUDE_KEYS = ("claude-0.23.1", "claude-0.101.0")
CODEX_KEYS = tuple(p.key for p in PACKAGES if p.key.startswith("codex"))
#: The cases written for the Anthropic and Responses agents run against these (claude-code-acp is
#: claude-agent-acp under its older name).
PEER_KEYS = (*CLAUDE_KEYS, "claudecode-0.16.2", *CODEX_KEYS)
#: Agents that retry failed model calls by themselves: their own cases in test_agents.py.
OTHER_KEYS = ("copilot-1.0.102", "opencode-1.18.33", "qwen-0.24.4")
#: codex-acp streams a warning chunk for a model it has no metadata for; each knows different ones.
CODEX_MODELS = {"codex-0.16.0": "gpt-5.4-mini", "codex-2.6.0": "gpt-5.5"}
#: 0.23 is told not to retry (it does not say so in ACP); 0.101 retries once by itself, as people
#: run it: the tier counts the prompts the relay sends, never the model calls.
CLAUDE_RETRIES = {"claude-0.23.1": "0", "claude-0.101.0": "1"}

T = TypeVar("T")


async def within(body: Coroutine[Any, Any, T], seconds: float = PEER_TEST_TIMEOUT_S) -> T:
    """Run a test body under a hard timeout; on expiry the body is cancelled (its runtime closed)."""
    try:
        return await asyncio.wait_for(body, seconds)
    except TimeoutError:
        pytest.fail(f"peer test did not finish within {seconds:g}s")


@dataclass
class Peer:
    """One real agent wired to this test's mock, HOME and cwd; ``capture`` is what it exchanged."""

    key: str
    package: Package
    spec: AgentSpec
    cwd: Path
    home: Path
    mock: ModelApiMock
    capture: Path

    @property
    def name(self) -> str:
        """The backend the relay must detect for it ("claude", "codex", "copilot", ... or "generic")."""
        family = self.key.split("-", 1)[0]
        return {"claudecode": "claude", "auggie": "generic"}.get(family, family)

    @property
    def marker(self) -> Path:
        """The file the mock's ``tool`` scenario makes the agent write (``echo ... > marker.txt``)."""
        return self.cwd / "marker.txt"

    def frames(self, direction: str = "client->agent") -> list[dict[str, Any]]:
        """The recorded frames one way (the relay's own by default), oldest first."""
        if not self.capture.exists():
            return []
        out = []
        for line in self.capture.read_text(encoding="utf-8").splitlines()[1:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line still being written
            if entry.get("dir") == direction and isinstance(entry.get("data"), dict):
                out.append(entry["data"])
        return out

    def prompts(self) -> int:
        """How many ``session/prompt`` requests the relay sent this agent."""
        return sum(1 for f in self.frames() if f.get("method") == "session/prompt")

    def keep_capture(self, scenario: str) -> None:
        """With ``ACP_RELAY_RECORD_DIR`` set, keep this test's capture there under ``scenario``."""
        target = os.environ.get("ACP_RELAY_RECORD_DIR", "").strip()
        if not target or not self.capture.exists():
            return
        lines = self.capture.read_text(encoding="utf-8").splitlines()
        meta = json.loads(lines[0])
        meta["_meta"]["scenario"] = scenario
        Path(target).mkdir(parents=True, exist_ok=True)
        out = Path(target) / f"{self.key}-{scenario}.jsonl"
        out.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n", encoding="utf-8")


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
        "TMPDIR": tmp_path / "tmp",  # gemini-cli writes an error report there on each failed call
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
    }
    for d in (home, cwd, *xdg.values()):
        d.mkdir(parents=True, exist_ok=True)
    return home, cwd, {k: str(v) for k, v in xdg.items()}


def _claude_env(key: str, mock: ModelApiMock, home: Path) -> dict[str, str]:
    """claude-agent-acp on the mock's Anthropic Messages API."""
    return {
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": mock.base_url,
        "CLAUDE_CODE_MAX_RETRIES": CLAUDE_RETRIES[key],
        # Offline: no updater, no telemetry or error reporting, no other non-model traffic.
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }


def _codex_env(key: str, mock: ModelApiMock, tmp_path: Path) -> dict[str, str]:
    """codex-acp on the mock's OpenAI Responses API, via a ``CODEX_HOME`` config."""
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model_provider = "mock"\nmodel = "{CODEX_MODELS[key]}"\n\n'
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{mock.openai_base_url}"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )
    return {"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "test-key"}


def _gemini_env(mock: ModelApiMock) -> dict[str, str]:
    """gemini-cli on the mock's Gemini API; a fixed model keeps its model router (a side call) out."""
    return {"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": mock.base_url,
            "GEMINI_MODEL": "gemini-2.5-pro", "GEMINI_CLI_NO_RELAUNCH": "true", "NO_BROWSER": "1"}


def _copilot_env(mock: ModelApiMock) -> dict[str, str]:
    """Copilot CLI offline, on the mock's Chat Completions API (bring your own key: no GitHub login)."""
    return {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": mock.openai_base_url,
            "COPILOT_PROVIDER_TYPE": "openai", "COPILOT_PROVIDER_API_KEY": "test-key", "COPILOT_MODEL": "gpt-4.1",
            "COPILOT_AUTO_UPDATE": "false", "NO_COLOR": "1"}


def _qwen_env(mock: ModelApiMock) -> dict[str, str]:
    """Qwen Code on the mock's Chat Completions API."""
    return {"OPENAI_BASE_URL": mock.openai_base_url, "OPENAI_API_KEY": "test-key",
            "OPENAI_MODEL": "qwen3-coder-plus", "NO_BROWSER": "1"}


def _opencode_env(mock: ModelApiMock, home: Path) -> dict[str, str]:
    """opencode on the mock's Anthropic API through its config file; bash and edits ask first (its
    default runs them without a permission request)."""
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "anthropic/claude-sonnet-4-5",
        "autoupdate": False,
        "share": "disabled",
        "provider": {"anthropic": {"options": {"baseURL": f"{mock.base_url}/v1", "apiKey": "test-key"}}},
        "permission": {"bash": "ask", "edit": "ask"},
    }
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "opencode.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return {"OPENCODE_DISABLE_AUTOUPDATE": "true", "OPENCODE_DISABLE_MODELS_FETCH": "true",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "true", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "true"}


def _env(key: str, mock: ModelApiMock, home: Path, tmp_path: Path) -> dict[str, str]:
    family = key.split("-", 1)[0]
    if family == "claudecode":
        return _claude_env("claude-0.23.1", mock, home)
    if family == "claude":
        return _claude_env(key, mock, home)
    if family == "codex":
        return _codex_env(key, mock, tmp_path)
    if family == "copilot":
        return _copilot_env(mock)
    if family == "qwen":
        return _qwen_env(mock)
    if family == "opencode":
        return _opencode_env(mock, home)
    if family == "gemini":
        return _gemini_env(mock)
    return {}  # auggie: nothing to point anywhere, it refuses without its own account


def build_peer(key: str, paths: PeerPaths, mock: ModelApiMock, tmp_path: Path, *,
               tool_gate: str = "ask") -> Peer:
    """The agent ``key`` (an install.PACKAGES key), recorded, on this test's mock, HOME and cwd."""
    package = next(p for p in PACKAGES if p.key == key)
    home, cwd, xdg = _dirs(tmp_path)
    extra = _env(key, mock, home, tmp_path)
    capture = tmp_path / "capture.jsonl"
    meta = {"agent_package": package.name, "agent_version": package.version, "recorded": "live",
            "model_api": "loopback mock model API", "scenario": ""}
    record = ("--out", str(capture), "--meta", json.dumps(meta),
              "--sub", f"{cwd}=<workspace>", "--sub", f"{home}=<home>", "--sub", f"{tmp_path}=<tmp>",
              "--sub", f"{paths.cache}=<peers>", "--sub", f"{mock.base_url}=http://127.0.0.1:<port>", "--")
    spec = AgentSpec(
        name=key,
        command=sys.executable,
        args=(str(RECORD), *record, *paths.commands[key]),
        env={"HOME": str(home), **xdg, **extra},
        cwd=str(cwd),
        backend="",  # detected, as for a config that names none: from the agent's agentInfo.name
        tool_gate=tool_gate,
    )
    return Peer(key, package, spec, cwd, home, mock, capture)
