"""Issue 17's tool gate against the real agents that get around it: opencode with its default
permissions runs ``bash`` without a permission request (the backstop stops the turn and says how to
make it ask), and Copilot CLI's ``/allow-all on`` turns its asking off (the relay turns it back on)."""

from __future__ import annotations

import json

import pytest

from tests.engine.test_engine_control import approval_messages, button
from tests.peers.harness import PEER_TEST_TIMEOUT_S, Peer, build_peer, within
from tests.peers.relay import PeerRelay
from tests.waiting import until

pytestmark = pytest.mark.peer

OPENCODE_HOW = '"permission": {"bash": "ask", "edit": "ask"}'


@pytest.fixture
def opencode_unconfigured(peer_paths, model_api, tmp_path) -> Peer:  # type: ignore[no-untyped-def]
    """opencode as installed: no ``permission`` entry in its opencode.json (its default runs bash unasked)."""
    peer = build_peer("opencode-1.18.33", peer_paths, model_api, tmp_path)
    path = peer.home / ".config" / "opencode" / "opencode.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.pop("permission", None)
    path.write_text(json.dumps(config), encoding="utf-8")
    return peer


async def test_opencode_running_bash_unasked_is_stopped_and_told_how_to_ask(
        relay, opencode_unconfigured: Peer) -> None:  # type: ignore[no-untyped-def]
    peer = opencode_unconfigured
    peer.mock.scenario = "tool"
    r: PeerRelay = await relay(peer)
    reply = await within(r.ask("write the marker file"))
    assert "ran a tool without asking first" in reply.text, reply.text
    assert OPENCODE_HOW in reply.text and "opencode.json" in reply.text
    methods = [f.get("method") for f in peer.frames()]
    assert "session/cancel" in methods, "the turn was stopped at once"
    assert "session/request_permission" not in [f.get("method") for f in peer.frames("agent->client")]
    assert not approval_messages(r), "nothing was ever asked: the tool ran on its own"


@pytest.fixture
def copilot(peer_paths, model_api, tmp_path) -> Peer:  # type: ignore[no-untyped-def]
    return build_peer("copilot-1.0.102", peer_paths, model_api, tmp_path)


async def test_copilot_allow_all_on_is_turned_back_off_and_the_next_tool_call_asks(
        relay, copilot: Peer) -> None:  # type: ignore[no-untyped-def]
    r: PeerRelay = await relay(copilot)
    await within(r.ask("/allow-all on"))

    def switched() -> list[dict]:  # Copilot reports the option after its turn ended: switched back then
        return [f["params"] for f in copilot.frames() if f.get("method") == "session/set_config_option"]

    await until(switched, what="the relay switches allow-all back", timeout=PEER_TEST_TIMEOUT_S)
    updates = [f["params"]["update"] for f in copilot.frames("agent->client")
               if f.get("method") == "session/update"
               and f["params"]["update"].get("sessionUpdate") == "config_option_update"]
    assert updates, "Copilot reported the option it switched"
    assert switched()[-1]["value"] in ("off", False), switched()
    copilot.mock.scenario = "tool"
    await r.send("write the marker file")
    await until(lambda: approval_messages(r), what="Copilot asks before running the command",
                timeout=PEER_TEST_TIMEOUT_S)
    await r.press(button(approval_messages(r)[0], "Deny").token)
    await r.idle()
    assert not copilot.marker.exists()
