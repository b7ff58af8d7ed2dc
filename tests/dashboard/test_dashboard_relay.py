"""The whole path: browser API -> dashboard -> real Engine -> demo agent subprocess -> back.

Each test drives the HTTP API exactly as the page does and reads the tab's event stream.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from core.config import RelayConfig
from core.store import ConversationRecord
from surfaces.dashboard.surface import conversation_key
from tests.listening import handshakes_while_held

from .conftest import DemoRelay, DemoRelayFactory, EventStream

TAB = "tab-one"
REFUSAL_LEAD = "The model declined to answer this request."


async def say(relay: DemoRelay, text: str, *, tab: str = TAB, message_id: str | None = None) -> None:
    body = {"text": text, "id": message_id or f"m{time.monotonic_ns()}"}
    response = await relay.post(tab, "messages", body)
    assert response.status == 202


def answered(fragment: str) -> object:
    """The reply holding ``fragment`` is final (it has its footer)."""
    return lambda s: any("⏱" in m["text"] for m in s.with_text(fragment))


async def test_a_prompt_streams_its_markdown_answer_into_the_tab(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "hello")
    await stream.until(answered("demo agent"), "the demo's answer")
    (reply,) = stream.with_text("demo agent")
    assert "This is a demo" in reply["text"] and "```python" in reply["text"]
    assert stream.texts("user") == ["hello"]
    edits = [e for e in stream.events if e.get("id") == reply["id"]]
    assert len(edits) > 1  # posted once, then edited as it streamed
    assert any(e["type"] == "typing" and e["active"] for e in stream.events)
    await stream.until(lambda s: not s.typing, "typing off")
    status = await relay.status(TAB)
    assert status["agent"] == "demo" and status["model"] == "demo-fast"
    assert status["models"] == ["demo-fast", "demo-careful"]
    assert status["session_id"] and status["context_pct"] and not status["busy"]


async def test_a_burst_of_connections_while_the_relay_is_busy_is_queued_not_dropped(
        demo_relay: DemoRelayFactory) -> None:
    """A burst of browsers (or scripts) connecting while the relay's loop is busy: the kernel keeps every
    handshake for the relay to accept, none waits out a retransmitted SYN (issue 24: aiohttp's default
    backlog of 128 sent the rest of 1,000 tabs one second back)."""
    relay = await demo_relay()
    port = int(relay.url.rstrip("/").rsplit(":", 1)[1])
    assert handshakes_while_held(port, 300) == 300
    stream = await relay.events(TAB)  # and the relay goes on serving once its loop runs again
    await say(relay, "hello")
    await stream.until(answered("demo agent"), "the demo's answer")


async def test_a_tool_call_waits_for_the_approval_button(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "run the tool please")
    await stream.until(lambda s: any(m["buttons"] for m in s.view.values()), "approval buttons")
    (ask,) = [m for m in stream.view.values() if m["buttons"]]
    assert "echo hello > demo.txt" in ask["text"]
    labels = [b["label"] for b in ask["buttons"]]
    assert labels == ["Allow once", "Allow `echo hello > demo.txt` for this session", "Deny"]
    response = await relay.post(TAB, "buttons", {"token": ask["buttons"][0]["token"], "id": ask["id"]})
    assert response.status == 200 and (await response.json())["outcome"] == "resolved"
    await stream.until(answered("allowed"), "the answer after the approval")
    await stream.until(lambda s: not s.view[ask["id"]]["buttons"], "the buttons go away")
    assert "Allowed once" in stream.view[ask["id"]]["text"]
    order = list(stream.view)
    (tool,) = [m for m in stream.view.values() if "✅ echo hello > demo.txt (execute): done" in m["text"]]
    (reply,) = stream.with_text("allowed")
    assert order.index(tool["id"]) < order.index(ask["id"]) < order.index(reply["id"]), \
        "the tool line above the prompt, the rest of the answer below it"
    again = await relay.post(TAB, "buttons", {"token": ask["buttons"][0]["token"], "id": ask["id"]})
    assert (await again.json())["outcome"] == "expired", "a second tap is answered expired, in place"
    assert not (relay.tmp / "work" / "demo.txt").exists()


async def test_a_plan_is_a_checklist(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "make a plan")
    await stream.until(answered("plan are done"), "the plan")
    (reply,) = stream.with_text("plan are done")
    assert "- [x] Read the question\n- [x] Sketch an answer\n- [x] Write it down" in reply["text"]


async def test_a_refusal_shows_the_refusal_card(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "please refuse")
    await stream.until(answered(REFUSAL_LEAD), "the refusal card")
    (reply,) = stream.with_text(REFUSAL_LEAD)
    assert "Category: demo" in reply["text"] and "Suggested model: demo-careful" in reply["text"]
    assert reply["text"].count("declines this on purpose") == 1  # streamed once, not repeated by the card


async def test_a_transient_error_is_retried_and_a_terminal_one_explained(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "flaky")
    await stream.until(answered("retry worked"), "the retried answer")
    assert "Retried successfully." in stream.with_text("retry worked")[0]["text"]
    await say(relay, "fail")
    await stream.until(answered("malformed"), "the error prose")
    prose = stream.with_text("malformed")[0]["text"]
    assert "/compact" in prose and "new conversation" in prose and "Traceback" not in prose


async def test_the_stop_button_ends_a_slow_answer(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "slow")
    await stream.until(lambda s: s.has("one word"), "the slow answer streaming")
    before = await relay.status(TAB)
    assert before["busy"]
    assert (await relay.post(TAB, "stop", {})).status == 200
    await stream.until(answered("Stopped."), "the stopped answer")
    after = await relay.status(TAB)
    assert not after["busy"]
    # The cancel reached the agent: the demo ends a slow turn early only on session/cancel, and
    # saves the session when a turn ends, so its file holds the stopped turn with part of the
    # answer (without the cancel it would still be streaming). The relay keeps the session, which
    # it sets aside when an agent never confirms a stop.
    saved = relay.tmp / "xdg" / "acp-relay" / "demo-sessions" / f"{before['session_id']}.json"
    history = json.loads(saved.read_text(encoding="utf-8"))["history"]
    assert history[-2:] and history[-2]["text"] == "slow" and history[-1]["role"] == "agent"
    assert "one word" in history[-1]["text"] and len(history[-1]["text"].split()) < 120
    assert after["session_id"] == before["session_id"]
    assert not stream.has("did not confirm the stop")


async def test_typed_commands_follow_the_command_table(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "/compact")
    await stream.until(answered("Compacted the conversation (demo)."), "the compaction")
    await say(relay, "/status")
    await stream.until(lambda s: s.has("Agent: demo"), "the status")
    await say(relay, "/help")
    await stream.until(lambda s: s.has("Commands:"), "the help")
    help_text = stream.with_text("Commands:")[0]["text"]
    assert "`/compact`" in help_text and "/new" not in help_text


async def test_the_model_picker_switches_the_model(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    early = await relay.post(TAB, "model", {"model": "demo-careful"})
    assert early.status == 200  # chosen before the first message: the session starts on it
    assert (await relay.status(TAB))["model"] == "demo-careful"
    await say(relay, "hi")
    await stream.until(answered("model `demo-careful`"), "an answer from the chosen model")
    assert (await relay.post(TAB, "model", {"model": "gpt-9"})).status == 400
    assert (await relay.post(TAB, "model", {"model": "demo-fast"})).status == 200
    await say(relay, "hi again")
    await stream.until(answered("model `demo-fast`"), "an answer from the new model")
    assert (await relay.status(TAB))["model"] == "demo-fast"


async def test_a_new_tab_lists_the_agents_models_before_its_first_message(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    assert (await relay.status(TAB))["models"] == []  # no session yet: status never starts an agent
    async with relay.client().post(f"/api/conversations/{TAB}/models", json={}) as response:
        assert response.status == 200
        assert await response.json() == {"model": "demo-fast", "models": ["demo-fast", "demo-careful"]}
    status = await relay.status(TAB)
    assert status["models"] == ["demo-fast", "demo-careful"] and status["session_id"]


async def test_when_the_agent_cannot_start_the_models_request_says_why(tmp_path: Path) -> None:
    relay = DemoRelay(tmp_path, RelayConfig.model_validate({
        "agents": {"demo": {"command": "no-such-agent-on-this-machine", "cwd": str(tmp_path)}},
        "store": {"path": str(tmp_path / "relay.db")},
        "surfaces": {"dashboard": {"host": "127.0.0.1", "port": 0}}}))
    await relay.start()
    try:
        async with relay.client().post(f"/api/conversations/{TAB}/models", json={}) as response:
            assert response.status == 400
            error = (await response.json())["error"]
    finally:
        await relay.close()
    assert "'no-such-agent-on-this-machine' was not found on PATH (agents.demo.command)" in error


async def test_each_tab_is_its_own_conversation(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    first, second = await relay.events("tab-a"), await relay.events("tab-b")
    await say(relay, "/compact", tab="tab-a")
    await say(relay, "/compact", tab="tab-b")
    await first.until(answered("Compacted"), "tab a")
    await second.until(answered("Compacted"), "tab b")
    assert len(first.view) == len(second.view) == 2
    a, b = await relay.status("tab-a"), await relay.status("tab-b")
    assert a["session_id"] and b["session_id"] and a["session_id"] != b["session_id"]


async def test_the_conversation_survives_a_reload_and_a_relay_restart(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "/compact", message_id="first-message")
    await stream.until(answered("Compacted"), "the first answer")
    session = (await relay.status(TAB))["session_id"]
    before = [(m["role"], m["text"]) for m in stream.view.values()]

    reloaded = await relay.events(TAB)  # a page reload: a new stream starts with the whole tab
    assert [(m["role"], m["text"]) for m in reloaded.view.values()] == before
    stream.response.close()
    reloaded.response.close()

    await relay.restart()
    after: EventStream = await relay.events(TAB)
    assert [(m["role"], m["text"]) for m in after.view.values()] == before
    await say(relay, "/compact", message_id="first-message")  # a resend after the restart: ignored
    await say(relay, "/compact")
    await after.until(lambda s: len(s.texts()) == 2 and "⏱" in s.texts()[-1], "the answer after the restart")
    assert (await relay.status(TAB))["session_id"] == session  # the agent's session was resumed
    assert len(after.texts("user")) == 2


async def test_a_relay_shutdown_mid_answer_leaves_its_final_state_in_the_tab(demo_relay: DemoRelayFactory) -> None:
    # The fixture shuts down like ``acp-relay run``: the engine first, so the cancelled turn's last
    # edit ("the relay restarted ...") still reaches the open dashboard, in the same message.
    relay = await demo_relay()
    stream = await relay.events(TAB)
    await say(relay, "slow")
    await stream.until(lambda s: s.has("one word"), "the slow answer streaming")
    (streaming,) = stream.with_text("one word")
    stream.response.close()
    await relay.restart()
    after = await relay.events(TAB)
    interrupted = after.view[streaming["id"]]["text"]
    assert "The relay restarted before this answer was finished." in interrupted
    assert "⏱" in interrupted


async def test_a_tab_whose_agent_was_removed_from_the_config_continues_on_the_default_agent(
        demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay()
    assert relay.store is not None
    # The tab talked to an agent that a config change has since removed.
    relay.store.save_conversation(ConversationRecord(conversation_key(TAB), "gone", str(relay.tmp / "work"), "s-old"))
    stream = await relay.events(TAB)
    async with relay.client().post(f"/api/conversations/{TAB}/model", json={"model": "demo-careful"}) as response:
        assert response.status == 200
    status = await relay.status(TAB)
    assert status["agent"] == "demo" and status["model"] == "demo-careful" and status["session_id"] != "s-old"
    await stream.until(lambda s: s.with_text("is no longer configured"), "the person is told why")
    await say(relay, "hello")
    await stream.until(answered("demo agent"), "the answer from the default agent")


async def test_the_configured_max_tabs_bounds_the_transcripts(demo_relay: DemoRelayFactory) -> None:
    relay = await demo_relay(max_tabs=1)
    for tab in ("first", "second"):
        stream = await relay.events(tab)
        assert (await relay.post(tab, "messages", {"text": "/help", "id": f"h-{tab}"})).status == 202
        await stream.until(lambda s: s.has("Commands:"), "the help text")
        stream.response.close()
    assert (await relay.events("first")).view == {}
    assert len((await relay.events("second")).view) == 2
