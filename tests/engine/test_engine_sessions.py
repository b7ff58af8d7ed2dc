"""Sessions across restarts, de-duplication, and the conversation commands.

what-users-hit 3 (duplicate replies after a restart) and 4 (sessions lost after a restart).
"""

from __future__ import annotations

from core.engine import wording
from tests.engine.conftest import KEY, RelayFactory, until


async def test_a_restart_in_the_middle_of_a_conversation_resumes_the_same_acp_session(
        relay: RelayFactory) -> None:
    r = await relay()
    first = await r.ask("text one")
    assert "one" in first.text
    sid = r.session_id()
    assert sid

    await r.restart()
    second = await r.ask("text two")
    assert "two" in second.text
    assert r.session_id() == sid, "the store still binds the conversation to the same ACP session"
    loads = [f for f in r.frames() if f.get("method") == "session/load"]
    assert [f["params"]["sessionId"] for f in loads] == [sid], "the new agent process loaded it"
    prompts = [f for f in r.frames() if f.get("method") == "session/prompt"]
    assert [f["params"]["sessionId"] for f in prompts] == [sid, sid]
    assert r.methods().count("session/new") == 1, "no new session after the restart"
    assert wording.SESSION_LOST not in second.text


async def test_a_session_the_agent_cannot_load_starts_a_new_one_with_a_notice(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text one")
    old = r.session_id()

    await r.restart(state_dir=r.tmp / "another-agent-state")  # this agent never saw the session
    reply = await r.ask("text two")
    assert wording.SESSION_LOST in reply.text, "a lost session is never replaced silently"
    assert "two" in reply.text
    new = r.session_id()
    assert new and new != old
    assert "session/load" in r.methods()
    assert r.methods().count("session/new") == 2


async def test_a_redelivered_message_is_not_answered_twice_even_across_a_restart(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("text once", message_id="platform-17")
    await r.idle()
    assert len(r.replies_to(msg)) == 1

    await r.send("text once", message_id="platform-17")  # the platform delivers it again
    await r.idle()
    await r.restart()
    await r.send("text once", message_id="platform-17")  # and again after the restart
    await r.idle()
    assert r.prompts() == ["text once"], "the agent saw the message once"
    assert len(r.messages()) == 1, "one reply in all"


async def test_reset_starts_a_new_generation_durably_and_a_new_acp_session(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text before")
    rec = r.store.get_conversation(KEY)
    assert rec is not None
    old_sid, old_gen = rec.session_id, rec.generation

    await r.send("/new")
    await r.idle()
    assert r.texts()[-1] == wording.NEW_CONVERSATION
    rec = r.store.get_conversation(KEY)
    assert rec is not None and rec.generation == old_gen + 1 and rec.session_id is None

    await r.restart()  # the reset survives a restart: no session/load of the old session
    await r.ask("text after")
    rec = r.store.get_conversation(KEY)
    assert rec is not None and rec.generation == old_gen + 1
    assert rec.session_id and rec.session_id != old_sid
    assert "session/load" not in r.methods()
    assert r.methods().count("session/new") == 2


async def test_status_reports_agent_session_folder_and_queue(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text hello")
    await r.send("/status")
    await r.idle()
    status = r.texts()[-1]
    assert "Agent: fake" in status
    assert f"Session: {r.session_id()}" in status
    assert f"Folder: {r.workdir}" in status
    assert "idle, 0 queued" in status


async def test_help_lists_the_commands_in_this_surfaces_spelling(relay: RelayFactory) -> None:
    r = await relay()
    await r.send("/help")
    await r.idle()
    text = r.texts()[-1]
    for spelling in ("/new", "/compact", "/stop", "/status", "/model", "/help"):
        assert f"`{spelling}`" in text
    assert r.prompts() == [], "a command never reaches the agent"


async def test_model_lists_and_switches_models_and_the_choice_is_kept(relay: RelayFactory) -> None:
    r = await relay("--models", "alpha,beta")
    await r.send("/model")
    await r.idle()
    listing = r.texts()[-1]
    assert "Current model: alpha" in listing and "alpha, beta" in listing

    await r.send("/model beta")
    await r.idle()
    assert r.texts()[-1] == wording.model_switched_text("beta")
    rec = r.store.get_conversation(KEY)
    assert rec is not None and rec.model == "beta"
    switches = [f for f in r.frames() if f.get("method") in ("session/set_model", "session/set_config_option")]
    assert switches and switches[-1]["params"].get("modelId", switches[-1]["params"].get("value")) == "beta"

    await r.send("/status")
    await r.idle()
    assert "Model: beta" in r.texts()[-1]


async def test_an_unknown_model_is_answered_in_words(relay: RelayFactory) -> None:
    r = await relay("--models", "alpha,beta")
    await r.send("/model gamma")
    await r.idle()
    text = r.texts()[-1]
    assert "gamma" in text and "Traceback" not in text
    rec = r.store.get_conversation(KEY)
    assert rec is None or rec.model != "gamma"


async def test_a_turn_cut_short_by_a_shutdown_is_replayed_on_the_same_session_after_restart(
        relay: RelayFactory) -> None:
    r = await relay()
    script = "text part one\npermission p1\ntext done"
    msg = await r.send(script)
    await until(lambda: [m for m in r.messages() if m.buttons], what="the approval is waiting")
    sid = r.session_id()
    assert [rec.message_id for rec in r.store.unfinished_inbound()] == [msg.message_id]

    await r.restart()  # the running turn is cancelled; its message stays unfinished
    await until(lambda: len([m for m in r.messages() if m.buttons]) == 2 and r.prompts() == [script, script],
                what="the replayed turn asks again")
    stale, approval = [m for m in r.messages() if m.buttons]
    result = await r.press(next(b.token for b in stale.buttons if b.label == "Deny"))
    assert result.outcome == "expired", "a button from before the restart is expired"
    await r.press(next(b.token for b in approval.buttons if b.label == "Allow once"))
    await r.idle()
    assert r.session_id() == sid
    loads = [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/load"]
    assert loads == [sid], "the replay ran on the restored session"
    assert "done" in r.answer(msg), "the replayed turn's answer arrived"
    assert r.store.unfinished_inbound() == []
