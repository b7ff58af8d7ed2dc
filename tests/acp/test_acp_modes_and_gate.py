"""A gate of ask or deny must see every tool call: modes in which an agent runs tools without
asking are refused, and left again when the agent switches into one by itself."""

from __future__ import annotations

import json

import pytest

from core.acp.client import AcpToolGateUnroutable

AUTO = json.dumps({"sessionUpdate": "current_mode_update", "currentModeId": "auto"})


@pytest.mark.parametrize("gate", ["ask", "deny"])
async def test_a_mode_that_skips_the_gate_is_refused(start, agent, gate: str) -> None:
    session = await (await start(agent(tool_gate=gate))).new_session()
    with pytest.raises(AcpToolGateUnroutable):
        await session.set_mode("auto")
    await session.set_mode("plan")  # a mode that still asks is fine
    assert session.current_mode == "plan"


async def test_with_a_gate_of_allow_any_mode_is_fine(start, agent) -> None:
    session = await (await start(agent(tool_gate="allow"))).new_session()
    await session.set_mode("auto")
    assert session.current_mode == "auto"


async def test_an_agent_that_switched_itself_into_auto_is_brought_back_within_that_turn(
        start, agent, recorder) -> None:
    session = await (await start(agent(tool_gate="ask"))).new_session()
    await session.prompt(f"update {AUTO}\ntext switched")
    assert session.current_mode == "default", "switched back at once, not only before the next turn"
    await session.prompt("text next turn")
    assert session.current_mode == "default"
    frames = [json.loads(line) for path in recorder.paths for line in path.read_text().splitlines()]
    set_modes = [f["params"]["modeId"] for f in frames if f.get("method") == "session/set_mode"]
    assert set_modes == ["default"]
