"""Fixtures for the peer tier: real agents from npm, pointed at the loopback model-API mock.

Run with ``pytest -m peer tests/peers`` (the default ``addopts`` deselects ``peer``). The agents are
installed on first use into ``.cache/peers`` (``ACP_RELAY_PEER_CACHE`` overrides), see install.py.
Each test gets its own mock, HOME and cwd under ``tmp_path``: tools the agents run for real stay there.
Without node or npm the whole tier is skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakes.model_api import ModelApiMock
from tests.peers.harness import CLAUDE_KEYS, MISSING_TOOLS, PEER_KEYS, SKIP_REASON, Peer, build_peer
from tests.peers.install import PeerInstallError, PeerPaths, ensure_installed
from tests.peers.relay import PeerRelay, peer_relay

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
    """Every agent, installed from npm on first use (a no-op once cached)."""
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


def _kept(request: pytest.FixtureRequest, peer: Peer) -> Iterator[Peer]:
    yield peer
    peer.keep_capture(request.node.originalname.removeprefix("test_"))


@pytest.fixture(params=PEER_KEYS)
def peer(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
         tmp_path: Path) -> Iterator[Peer]:
    """Each of the four claude and codex releases in turn (pinned and current)."""
    yield from _kept(request, build_peer(request.param, peer_paths, model_api, tmp_path))


@pytest.fixture(params=CLAUDE_KEYS)
def claude(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
           tmp_path: Path) -> Iterator[Peer]:
    """Both claude-agent-acp releases."""
    yield from _kept(request, build_peer(request.param, peer_paths, model_api, tmp_path))


@pytest.fixture
def gemini(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
           tmp_path: Path) -> Iterator[Peer]:
    """gemini-cli in ACP mode: a real agent of the generic backend."""
    yield from _kept(request, build_peer("gemini-0.61.0", peer_paths, model_api, tmp_path))


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[peer_relay]:
    """``r = await relay(peer)``: a real Engine on a memory surface, driving that agent."""
    made: list[PeerRelay] = []

    async def build(peer: Peer) -> PeerRelay:
        r = await peer_relay(peer, tmp_path / f"relay{len(made)}")
        made.append(r)
        return r

    yield build
    for r in made:
        await r.close()
