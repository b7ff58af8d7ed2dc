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
from tests.peers.harness import CLAUDE_KEYS, MISSING_TOOLS, OTHER_KEYS, PEER_KEYS, SKIP_REASON, Peer, build_peer
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
    callspec = getattr(request.node, "callspec", None)
    params = [str(v) for v in (callspec.params.values() if callspec else ()) if v != peer.key]
    peer.keep_capture("-".join([request.node.originalname.removeprefix("test_"), *params]))


@pytest.fixture(params=PEER_KEYS)
def peer(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
         tmp_path: Path) -> Iterator[Peer]:
    """Each claude and codex release in turn (pinned and current, claude-code-acp included)."""
    yield from _kept(request, build_peer(request.param, peer_paths, model_api, tmp_path))


@pytest.fixture(params=CLAUDE_KEYS)
def claude(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
           tmp_path: Path) -> Iterator[Peer]:
    """Both claude-agent-acp releases."""
    yield from _kept(request, build_peer(request.param, peer_paths, model_api, tmp_path))


@pytest.fixture
def gemini(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
           tmp_path: Path) -> Iterator[Peer]:
    """gemini-cli in ACP mode: the gemini backend."""
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


@pytest.fixture(params=OTHER_KEYS)
def other(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
          tmp_path: Path) -> Iterator[Peer]:
    """Copilot CLI, opencode and Qwen Code in turn: agents that retry model calls by themselves."""
    yield from _kept(request, build_peer(request.param, peer_paths, model_api, tmp_path))


@pytest.fixture
def auggie(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
           tmp_path: Path) -> Iterator[Peer]:
    """Auggie: needs an Augment account, which the tier does not have."""
    yield from _kept(request, build_peer("auggie-0.36.0", peer_paths, model_api, tmp_path))
