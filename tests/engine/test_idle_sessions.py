"""A conversation whose idle session the relay let go (issue 24) goes on in the same session: its
next message reattaches it with ``session/load``, with no notice and no new session."""

from __future__ import annotations

import time

from core.engine import wording
from tests.engine.conftest import KEY, RelayFactory


async def test_the_next_message_reattaches_a_session_closed_while_idle(relay: RelayFactory) -> None:
    r = await relay("--close", timeouts={"idle_s": 60})
    await r.ask("text first answer")
    await r.ask("text other answer", key="memory:c2")
    first = r.session_id()
    [runtime] = r.engine.pool.runtimes()

    assert await r.engine.pool.close_idle_sessions(now=time.monotonic() + 3600) == 2
    assert runtime.sessions == {}, "no handle kept for an idle conversation"
    closed = [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/close"]
    assert sorted(closed) == sorted([first, r.session_id("memory:c2")])

    reply = await r.ask("text second answer")
    assert "second answer" in reply.text
    assert r.session_id() == first, "the same session goes on"
    loads = [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/load"]
    assert loads == [first], "reattached with session/load"
    assert r.methods().count("session/new") == 2, "no new session for it"
    notices = "\n".join(r.texts(KEY))
    assert wording.SESSION_LOST not in notices and wording.SESSION_NOT_RESUMABLE not in notices
    assert list(runtime.sessions) == [first], "only the conversation that spoke again is held"
