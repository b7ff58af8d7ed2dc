"""A session handle stays small (issue 24): a runtime holds one per conversation until it has been idle
for ``timeouts.idle_s`` (30 minutes by default), so 10,000 conversations that spoke within that time
are 10,000 handles. What every session of an agent says alike (its modes and their names) is kept
once, not once per session; what only a turn with tool calls needs is made when one comes."""

from __future__ import annotations

import sys

from core.acp.session import AcpSession


async def test_sessions_with_the_same_modes_share_one_table(start, agent) -> None:
    rt = await start(agent())
    first, second = await rt.new_session(), await rt.new_session()
    assert first.modes == ("default", "plan", "auto")
    assert first.mode_names == {"default": "Default", "plan": "Plan", "auto": "Auto"}
    assert second.modes is first.modes and second.mode_names is first.mode_names
    assert all(sys.intern(m) is m for m in second.modes), "one string per mode id, not one per session"
    assert second.current_mode is first.current_mode


async def test_switching_one_sessions_mode_leaves_the_others(start, agent) -> None:
    rt = await start(agent())
    first, second = await rt.new_session(), await rt.new_session()
    await rt.request("session/set_mode", {"sessionId": first.session_id, "modeId": "plan"})
    first.current_mode = "plan"
    assert (first.current_mode, second.current_mode) == ("plan", "default")
    assert second.modes == ("default", "plan", "auto")


def test_different_modes_are_not_mixed_up() -> None:
    class _Runtime:  # what a session reads of its runtime while it reads its answer: nothing
        pass

    def made(names: list[str]) -> AcpSession:
        modes = {"currentModeId": names[0], "availableModes": [{"id": n, "name": n.title()} for n in names]}
        return AcpSession(_Runtime(), "s", {"modes": modes})  # type: ignore[arg-type]

    one, other = made(["default", "plan"]), made(["agent", "plan"])
    assert one.modes == ("default", "plan") and other.modes == ("agent", "plan")
    assert other.mode_names == {"agent": "Agent", "plan": "Plan"}


async def test_a_session_never_asked_for_a_tool_holds_no_table_of_asked_calls(start, agent) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    assert (await session.prompt("text hello")).text == "hello"
    assert session._asked is None, "made by the first permission request, not by every session"
