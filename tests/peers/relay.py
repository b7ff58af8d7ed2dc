"""A real Engine on a memory surface driving a real agent: the peer tier's end-to-end turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.config import RelayConfig
from tests.engine.conftest import KEY, Relay, make_surface, prompt_text
from tests.peers.harness import PEER_TEST_TIMEOUT_S, PROMPT_TIMEOUT_S, REQUEST_TIMEOUT_S, Peer
from tests.waiting import until

__all__ = ["ATTEMPTS", "PeerRelay", "peer_relay"]

#: The retry ladder of these relays (its waits shrink to milliseconds: tests/engine's fast sleep).
#: The budget covers the attempts too, and a real agent's take a second or more.
ATTEMPTS = 3
BUDGET_S = 60.0


class PeerRelay(Relay):
    """``tests.engine``'s Relay, its agent a real one: ``prompts()`` are what the relay sent it."""

    peer: Peer

    def config(self) -> RelayConfig:
        spec = self.peer.spec
        agent = {"command": spec.command, "args": list(spec.args), "env": dict(spec.env), "cwd": spec.cwd,
                 "tool_gate": spec.tool_gate}
        data: dict[str, Any] = {
            "agents": {"peer": agent},
            "store": {"path": str(self.db)},
            "retry": {"attempts": ATTEMPTS, "budget_s": BUDGET_S, "base_delay_s": 0.05},
            "timeouts": {"prompt_s": PROMPT_TIMEOUT_S, "request_s": REQUEST_TIMEOUT_S, "approval_s": 5},
            "engine": {"edit_interval_s": 0.02},
        }
        return RelayConfig.model_validate(data)

    async def idle(self, key: str = KEY) -> None:
        """A real agent's turn may take its own retries' time (opencode: ten seconds for a 429), more
        while other agents share the machine: waited for as long as a peer test may run."""
        await until(lambda: self.is_idle(key), what=f"{key} idle", timeout=PEER_TEST_TIMEOUT_S)

    def prompts(self) -> list[str]:
        """The text of every ``session/prompt`` the relay sent, from the agent's capture."""
        return [prompt_text(f) for f in self.peer.frames() if f.get("method") == "session/prompt"]


async def peer_relay(peer: Peer, base: Path) -> PeerRelay:
    """Start a relay whose only agent is ``peer``."""
    base.mkdir(parents=True, exist_ok=True)
    r = PeerRelay(base, make_surface())
    r.peer = peer
    return await r.start()  # type: ignore[return-value]
