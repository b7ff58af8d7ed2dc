"""Driving real agents from the chat: claude-agent-acp 0.101 and codex-acp 2.6 list their sessions,
resume one, close one on a reset, and report what a turn cost, through a real Engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.engine.blocks import Choices, Footer
from tests.fakes.model_api import MOCK_TEXT, ModelApiMock
from tests.peers.harness import Peer, build_peer, within
from tests.peers.install import PeerPaths
from tests.waiting import until

pytestmark = pytest.mark.peer

#: The releases that implement session/list, /resume and /close and usage with cost.
CURRENT = ("claude-0.101.0", "codex-2.6.0")


@pytest.fixture(params=CURRENT)
def current(request: pytest.FixtureRequest, peer_paths: PeerPaths, model_api: ModelApiMock,
            tmp_path: Path) -> Iterator[Peer]:
    yield build_peer(request.param, peer_paths, model_api, tmp_path)


def _methods(peer: Peer) -> list[str]:
    return [f.get("method", "") for f in peer.frames()]


async def test_list_resume_close_and_cost(relay, current: Peer) -> None:
    r = await relay(current)
    first = await within(r.ask("say hi"))
    assert MOCK_TEXT in first.text
    desk = r.session_id()
    footer = first.blocks[-1]
    assert isinstance(footer, Footer)
    if current.key.startswith("claude"):  # claude-agent-acp reports its cost with its usage
        assert footer.cost.endswith(" USD"), footer
        status = await within(r.send("/status"))
        assert "Cost so far: " in r.reply_to(status).text

    await within(r.send("/new"))
    assert "session/close" in _methods(current)
    closed = [f["params"]["sessionId"] for f in current.frames() if f.get("method") == "session/close"]
    assert closed == [desk]
    # the next session is opened while the person writes: the next message makes none
    await within(until(lambda: r.session_id() not in (None, desk), "the next session, opened ahead"))
    opened = _methods(current).count("session/new")
    await within(r.ask("say hi again"))
    assert r.session_id() != desk and _methods(current).count("session/new") == opened

    listing = await within(r.send("/sessions"))
    shown = r.reply_to(listing)
    assert shown.blocks and isinstance(shown.blocks[0], Choices), shown.text
    listed = [f["params"] for f in current.frames() if f.get("method") == "session/list"]
    assert listed[-1]["cwd"] == "<workspace>"  # the folder, as the capture spells it
    assert len(shown.buttons) >= 1
    # Both list the closed session too (named by its first prompt), newest first, and resume it.
    assert [b.label.split(" · ")[0] for b in shown.buttons][:2] == ["say hi again", "say hi"]
    result = await within(r.press(shown.buttons[1].token))
    assert result.text == "Continuing the session \u201csay hi\u201d (last used just now): the agent remembers it."
    assert "not shown again" not in result.text  # resumed: nothing was replayed
    assert r.session_id() == desk
    assert "session/resume" in _methods(current) and "session/load" not in _methods(current)
    again = await within(r.ask("back at the desk"))
    assert MOCK_TEXT in again.text
    prompts = [f["params"]["sessionId"] for f in current.frames() if f.get("method") == "session/prompt"]
    assert prompts[-1] == prompts[0]  # the desk's session answered
