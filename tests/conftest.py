"""Shared by every test tier: a clean environment and the scripted fake ACP agent.

Keep this file small; a tier's own fixtures belong in that tier's conftest.py.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.acp.spec import AgentSpec
from core.logs import log_path, setup_logging
from core.redact import clear_secrets
from tests.postgres import INSTALL_HINT, PostgresServer, server_binaries

FAKE_AGENT_PATH = Path(__file__).resolve().parent / "fakes" / "acp_agent.py"

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy and no Slack credentials from the developer's shell reach a test."""
    for name in list(os.environ):
        if name.upper() in _PROXY_VARS or name.startswith("SLACK_"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_secrets_from_other_tests() -> Iterator[None]:
    """Redaction by value starts empty in every test, whatever an earlier one registered."""
    clear_secrets()
    yield
    clear_secrets()


@pytest.fixture
def relay_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The relay's own logging, as ``acp-relay run`` sets it up, writing under ``tmp_path``; yields the
    log file's path. pytest's handlers are put back afterwards."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    setup_logging(logging.WARNING)
    try:
        yield log_path()
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])


FakeAgentSpec = Callable[..., AgentSpec]


@pytest.fixture
def fake_agent_spec(tmp_path: Path) -> FakeAgentSpec:
    """``fake_agent_spec("--kiro", backend="kiro", tool_gate="allow")`` -> an AgentSpec for the fake.

    ``cwd`` defaults to ``tmp_path``; ``env`` becomes ``AgentSpec.env``.
    """

    def build(
        *flags: str,
        backend: str = "generic",
        tool_gate: str = "ask",
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str = "fake",
    ) -> AgentSpec:
        return AgentSpec(
            name=name,
            command=sys.executable,
            args=(str(FAKE_AGENT_PATH), *flags),
            env=dict(env or {}),
            cwd=str(tmp_path if cwd is None else cwd),
            backend=backend,
            tool_gate=tool_gate,
        )

    return build


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server (``tests/postgres.py``) for the whole session, started when a test
    first asks for it; skipped, saying how to install what is missing, without the server or psycopg."""
    if server_binaries() is None:
        pytest.skip(INSTALL_HINT)
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg is not installed: pip install 'acp-relay[postgres]' (make install does)")
    server = PostgresServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A server of the test's own, to stop and start again (``halt``, ``resume``: the session's is shared).
    Durable, as a real one: what it confirmed before a crash is there after it."""
    if server_binaries() is None:
        pytest.skip(INSTALL_HINT)
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg is not installed: pip install 'acp-relay[postgres]' (make install does)")
    server = PostgresServer.start(durable=True)
    try:
        yield server
    finally:
        server.stop()
