"""Issue 17 through the engine (memory surface, the scripted agent as a real process): a tool run without
asking stops the turn and says how to make the agent ask; a self-switched mode is switched back; "allow
for this session" covers what the person saw, and says so on its button; the approval shows what runs."""

from __future__ import annotations

from core.engine import wording
from tests.engine.conftest import RelayFactory, make_surface, until
from tests.engine.test_engine_control import approval_messages, button, wait_approval

COPILOT = "https://agentclientprotocol.com/protocol/session-modes#"
OPENCODE_HOW = '"permission": {"bash": "ask", "edit": "ask"}'


# -- the backstop ------------------------------------------------------------------------------


async def test_opencode_running_bash_without_asking_stops_the_turn_and_says_how_to_make_it_ask(
        relay: RelayFactory) -> None:
    r = await relay("--agent-name", "opencode")
    reply = await r.ask("run b1 execute rm -rf build\nhang\ntext never")
    assert "session/cancel" in r.methods()
    text = reply.text
    assert "rm -rf build" in text and "never" not in text
    assert "ran a tool without asking first (rm -rf build, execute)" in text
    assert OPENCODE_HOW in text and "opencode.json" in text
    assert "Stopped." not in text, "not a stop the person asked for: the reason is said instead"


async def test_an_unknown_agent_running_a_tool_unasked_gets_the_generic_advice(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("run e1 - write the config\nhang")
    assert "ran a tool without asking first (write the config, other)" in reply.text
    assert "Configure the agent to ask before it runs tools" in reply.text
    assert OPENCODE_HOW not in reply.text


async def test_a_read_only_tool_run_without_asking_is_fine(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("run s1 search find the tests\ntext found them")
    assert "found them" in reply.text and "without asking" not in reply.text


async def test_an_unasked_run_is_never_retried_or_replayed(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("run b1 execute touch marker\nhang")
    assert len(r.prompts()) == 1, "the turn was not tried again"


async def test_a_call_left_in_progress_without_ever_being_asked_for_stops_the_turn(relay: RelayFactory) -> None:
    r = await relay("--agent-name", "opencode")
    reply = await r.ask("tool b1 execute sleep 600; rm -rf build\ntool_update b1 in_progress\nhang\ntext never")
    assert "session/cancel" in r.methods()
    assert "ran a tool without asking first (sleep 600; rm -rf build, execute)" in reply.text
    assert "never" not in reply.text


async def test_a_call_marked_in_progress_and_then_asked_for_is_not_stopped(relay: RelayFactory) -> None:
    # opencode (configured to ask) and codex-acp 2.x mark a call in_progress, THEN ask for it.
    r = await relay("--agent-name", "opencode")
    msg = await r.send("tool b1 execute make test\ntool_update b1 in_progress\npermission b1\ntext after")
    approval = await wait_approval(r)
    await r.press(button(approval, "Allow once").token)
    await r.idle()
    answer = r.answer(msg)
    assert "after" in answer and "without asking" not in answer
    assert "session/cancel" not in r.methods()


# -- modes the agent switches itself into -------------------------------------------------------


async def test_an_agent_switching_itself_into_auto_is_switched_back_and_the_answer_stands(
        relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("mode auto\ntext done")
    assert "done" in reply.text
    modes = [f["params"]["modeId"] for f in r.frames() if f.get("method") == "session/set_mode"]
    assert modes == ["default"]


async def test_copilot_turning_on_allow_all_is_turned_off(relay: RelayFactory) -> None:
    r = await relay("--copilot")
    reply = await r.ask("allow_all on\ntext done")
    assert "done" in reply.text
    [frame] = [f for f in r.frames() if f.get("method") == "session/set_config_option"]
    assert (frame["params"]["configId"], frame["params"]["value"]) == ("allow_all", "off")


async def test_an_agent_that_cannot_be_switched_back_has_its_turn_refused_with_the_reason(
        relay: RelayFactory) -> None:
    r = await relay("--locked-modes")
    reply = await r.ask("mode yolo\nhang")
    assert "switched itself to mode 'yolo'" in reply.text
    assert "agents.fake.tool_gate is 'ask'" in reply.text


# -- "allow for this session" covers what the person saw ----------------------------------------


async def test_allowing_ls_for_the_session_does_not_let_rm_run_unasked(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("tool a execute ls -la\npermission a\ntool b execute rm -rf build\npermission b")
    first = await wait_approval(r)
    label = "Allow `ls -la` for this session"
    assert [b.label for b in first.buttons] == ["Allow once", label, "Deny"], "the scope is said before the click"
    await r.press(button(first, label).token)
    second = await wait_approval(r, 2)
    assert "rm -rf build" in second.text, "another command is asked about"
    await r.press(button(second, "Deny").token)
    await r.idle()
    reply = r.answer(msg)
    assert "permission:selected:allow-once" in reply and "permission:selected:reject" in reply
    await until(lambda: "the same command runs again without asking" in approval_messages(r)[0].text,
                what="the first approval settled")


async def test_the_same_command_is_allowed_again_without_asking_in_later_turns(relay: RelayFactory) -> None:
    r = await relay()
    await r.send("tool a execute ls -la\npermission a")
    await r.press(button(await wait_approval(r), "Allow `ls -la` for this session").token)
    await r.idle()
    msg = await r.send("tool b execute ls -la\npermission b")
    await r.idle()
    assert "permission:selected:allow-once" in r.answer(msg)
    assert len(approval_messages(r)) == 1, "not asked again"


async def test_an_edit_allowed_for_the_session_covers_that_path_only(relay: RelayFactory) -> None:
    r = await relay()
    await r.send("tool a edit Edit src/a.py\npermission a")
    await r.press(button(await wait_approval(r), "Allow `Edit src/a.py` for this session").token)
    await r.idle()
    await r.send("tool b edit Edit src/a.py\npermission b\ntool c edit Edit src/b.py\npermission c")
    second = await wait_approval(r, 2)
    assert "src/b.py" in second.text
    await r.press(button(second, "Deny").token)
    await r.idle()
    assert len(approval_messages(r)) == 2


async def test_a_long_command_fits_the_button(relay: RelayFactory) -> None:
    r = await relay()
    command = "find . -name '*.py' -newer setup.cfg -exec grep -l TODO {} + | sort | uniq"
    await r.send(f"tool a execute {command}\npermission a")
    approval = await wait_approval(r)
    [label] = [b.label for b in approval.buttons if b.label.endswith("for this session")]
    assert len(label) <= wording.LABEL_MAX and label.startswith("Allow `find . -name")
    assert command in approval.text, "the whole command is in the prompt itself"
    await r.press(button(approval, "Deny").token)
    await r.idle()


async def test_without_buttons_the_numbered_hint_names_the_scope(relay: RelayFactory) -> None:
    r = await relay(surface=make_surface(can_buttons=False))
    msg = await r.send("tool a execute ls -la\npermission a\ntool b execute rm x\npermission b")
    first = await wait_approval(r)
    assert "`approve 2` to allow `ls -la` for the rest of this session" in first.text
    await r.send("approve 2")
    await wait_approval(r, 2)
    await r.send("deny")
    await r.idle()
    assert "permission:selected:reject" in r.answer(msg)


# -- the approval shows what will run (Copilot CLI: "Running command", the command in rawInput) --


async def test_copilots_generic_request_title_does_not_hide_the_command(relay: RelayFactory) -> None:
    r = await relay("--copilot")
    await r.send("permission p1\ntext after")
    approval = await wait_approval(r)
    assert approval.text.startswith("The agent wants to run: Running command: p1")
    assert [b.label for b in approval.buttons][1] == "Allow `p1` for this session"
    await r.press(button(approval, "Deny").token)
    await r.idle()
    await until(lambda: any("🚫 Running command: p1" in t for t in r.texts()), what="the tool line")


async def test_copilots_generic_request_title_does_not_overwrite_the_tool_line(relay: RelayFactory) -> None:
    r = await relay("--copilot")
    msg = await r.send("tool t1 execute git status --short\npermission t1\ntext after")
    approval = await wait_approval(r)
    assert approval.text.startswith("The agent wants to run: git status --short (execute)")
    await r.press(button(approval, "Allow once").token)
    await r.idle()
    answer = r.answer(msg)
    assert "git status --short (execute): done" in answer
    assert "Running command" not in answer
