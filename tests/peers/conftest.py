"""Fixtures for the peer tier: real agents from npm, pointed at the loopback model-API mock.

Run with ``pytest -m peer tests/peers`` (the default ``addopts`` deselects ``peer``). The agents are
installed on first use into ``.cache/peers`` (``ACP_RELAY_PEER_CACHE`` overrides), see install.py.
Each test gets its own mock, HOME and cwd under ``tmp_path``: tools the agents run for real stay there.
Without node or npm the whole tier is skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.model_api import ModelApiMock
from tests.peers.harness import MISSING_TOOLS, SKIP_REASON, Peer, claude_peer, codex_peer
from tests.peers.install import PeerInstallError, PeerPaths, ensure_installed

PEERS_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not MISSING_TOOLS:
        return
    skip = pytest.mark.skip(reason=f"{SKIP_REASON} (missing: {', '.join(MISSING_TOOLS)})")
    for item in items:
        if PEERS_DIR in Path(str(item.path)).parents and item.get_closest_marker("peer"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def peer_paths() -> PeerPaths:
    """Both agents, installed from npm on first use (a no-op once cached)."""
    if MISSING_TOOLS:
        pytest.skip(SKIP_REASON)
    try:
        return ensure_installed(quiet=True)
    except PeerInstallError as exc:
        pytest.fail(f"could not install the peer agents from npm: {exc}")


@pytest.fixture
async def model_api() -> AsyncIterator[ModelApiMock]:
    async with ModelApiMock() as mock:
        yield mock


@pytest.fixture(params=["claude", "codex"])
def peer(
    request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock, tmp_path: Path
) -> Peer:
    """Each real agent in turn."""
    build = claude_peer if request.param == "claude" else codex_peer
    return build(peer_paths, model_api, tmp_path)


@pytest.fixture
def claude(peer_paths: PeerPaths, model_api: ModelApiMock, tmp_path: Path) -> Peer:
    return claude_peer(peer_paths, model_api, tmp_path)


@pytest.fixture
def codex(peer_paths: PeerPaths, model_api: ModelApiMock, tmp_path: Path) -> Peer:
    return codex_peer(peer_paths, model_api, tmp_path)
