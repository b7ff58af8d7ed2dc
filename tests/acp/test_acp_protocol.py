"""initialize, authenticate, session/new, session/load, prompt content, modes and models."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from core.acp.client import AcpAuthRequired, AcpError, AcpModelUnavailable
from core.acp.runtime import CLIENT_INFO
from core.failures import classify

PNG_1PX = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8"
                  "cfc0f01f0005000201a5f6e4e00000000049454e44ae426082")).decode()


async def test_initialize_reads_agent_info_and_capabilities(start, agent, recorder) -> None:
    rt = await start(agent())
    assert rt.init_result["agentInfo"]["name"] == "fake-acp-agent"
    assert rt.load_supported is True
    assert rt.backend == "generic"
    init = recorder.frames()[0]
    assert init["method"] == "initialize"
    assert init["params"]["protocolVersion"] == 1
    assert init["params"]["clientInfo"] == CLIENT_INFO
    # notices, compaction updates, forms and links are shown, so the relay asks for them (ACP sends them
    # only then)
    assert init["params"]["clientCapabilities"] == {
        "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False,
        "session": {"notices": {}, "compaction": {}}, "elicitation": {"form": {}, "url": {}}}


async def test_backend_detected_from_agent_info(start, agent) -> None:
    rt = await start(agent("--kiro", backend=""))
    assert rt.backend == "kiro"


async def test_authenticate_with_the_agents_env_var(start, agent, recorder) -> None:
    rt = await start(agent("--auth-env", "FAKE_AGENT_TOKEN", env={"FAKE_AGENT_TOKEN": "t0ken"}))
    session = await rt.new_session()
    assert (await session.prompt("hello")).text == "echo: hello"
    auth = [f for f in recorder.frames() if f.get("method") == "authenticate"]
    assert [a["params"] for a in auth] == [{"methodId": "var-auth"}]


async def test_without_the_env_var_session_new_raises_auth_required(start, agent, recorder) -> None:
    rt = await start(agent("--auth-env", "FAKE_AGENT_TOKEN"))
    assert "authenticate" not in recorder.methods()
    with pytest.raises(AcpAuthRequired) as info:
        await rt.new_session()
    assert info.value.rpc_code == -32000
    assert info.value.transient is False
    assert classify(info.value).kind == "auth"


async def test_our_own_env_var_does_not_count_as_the_agents(start, agent, recorder,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The child env is trimmed: a variable only WE have never reaches the agent, so claiming env-var
    auth with it would fail; the runtime must decide from the agent's environment."""
    monkeypatch.setenv("FAKE_AGENT_TOKEN", "ours-only")
    rt = await start(agent("--auth-env", "FAKE_AGENT_TOKEN"))
    assert "authenticate" not in recorder.methods()
    with pytest.raises(AcpAuthRequired):
        await rt.new_session()


async def test_session_new_sends_cwd_and_reads_modes(start, agent, recorder, tmp_path: Path) -> None:
    rt = await start(agent())
    session = await rt.new_session(cwd=str(tmp_path))
    assert session.modes == ("default", "plan", "auto")
    assert session.current_mode == "default"
    assert rt.sessions == {session.session_id: session}
    new = next(f for f in recorder.frames() if f.get("method") == "session/new")
    assert new["params"] == {"cwd": str(tmp_path.resolve()), "mcpServers": []}


async def test_session_load_replays_history(start, agent, tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = await start(agent("--state-dir", str(state)))
    session = await first.new_session()
    await session.prompt("hello there")
    sid = session.session_id
    await first.close()

    second = await start(agent("--state-dir", str(state)))
    loaded = await second.load_session(sid)
    assert loaded.replayed == 2  # the user's prompt and the agent's answer
    assert loaded.session_id == sid
    assert (await loaded.prompt("again")).text == "echo: again"


async def test_session_load_unknown_session(start, agent) -> None:
    rt = await start(agent())
    with pytest.raises(AcpError) as info:
        await rt.load_session("no-such-session")
    assert info.value.rpc_code == -32002
    assert info.value.transient is False
    assert "no-such-session" not in rt.sessions


async def test_session_load_unsupported(start, agent, recorder) -> None:
    rt = await start(agent("--no-load"))
    assert rt.load_supported is False
    with pytest.raises(AcpError) as info:
        await rt.load_session("anything")
    assert info.value.rpc_code == -32601
    assert "session/load" not in recorder.methods()


async def test_kiro_session_load_needs_the_session_file_meta(start, agent, recorder, tmp_path: Path) -> None:
    rt = await start(agent("--kiro", backend="kiro"))
    session = await rt.new_session()
    await session.prompt("remember me")
    with pytest.raises(AcpError) as info:
        await rt.load_session(session.session_id)  # kiro-cli ignores a load without the session file
    assert info.value.rpc_code == -32002
    meta = {"_kiro.dev/session_file": str(tmp_path / "session.json")}
    loaded = await rt.load_session(session.session_id, meta=meta)
    assert loaded.replayed == 2
    load = [f for f in recorder.frames() if f.get("method") == "session/load"][-1]
    assert load["params"]["_meta"] == meta
    assert load["params"]["sessionId"] == session.session_id


async def test_prompt_with_text_and_image(start, agent, recorder) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    blocks = [{"type": "text", "text": "report_images"},
              {"type": "image", "mimeType": "image/png", "data": PNG_1PX}]
    stats = await session.prompt(blocks)
    assert stats.text == "images:1"
    prompt = next(f for f in recorder.frames() if f.get("method") == "session/prompt")
    assert prompt["params"] == {"sessionId": session.session_id, "prompt": blocks}


async def test_plain_text_prompt_is_one_text_block(start, agent, recorder) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    stats = await session.prompt("/compact")
    assert stats.text == "echo: /compact"
    assert stats.stop_reason == "end_turn"
    assert stats.chunks == 1
    prompt = next(f for f in recorder.frames() if f.get("method") == "session/prompt")
    assert prompt["params"]["prompt"] == [{"type": "text", "text": "/compact"}]


async def test_set_mode(start, agent, recorder) -> None:
    rt = await start(agent())
    session = await rt.new_session()
    await session.set_mode("plan")
    assert session.current_mode == "plan"
    frame = next(f for f in recorder.frames() if f.get("method") == "session/set_mode")
    assert frame["params"] == {"sessionId": session.session_id, "modeId": "plan"}
    with pytest.raises(AcpError) as info:
        await session.set_mode("no-such-mode")
    assert info.value.rpc_code == -32602
    assert session.current_mode == "plan"


async def test_set_model_through_config_option(start, agent, recorder) -> None:
    rt = await start(agent("--config-options", "model-a,model-b"))
    session = await rt.new_session()
    assert session.models == ("model-a", "model-b")
    assert session.current_model == "model-a"
    assert session.model_config_id == "model"
    await session.set_model("model-b")
    assert session.current_model == "model-b"
    methods = recorder.methods()
    assert "session/set_config_option" in methods and "session/set_model" not in methods
    frame = next(f for f in recorder.frames() if f.get("method") == "session/set_config_option")
    assert frame["params"] == {"sessionId": session.session_id, "configId": "model", "value": "model-b"}


async def test_set_model_legacy_kiro(start, agent, recorder) -> None:
    rt = await start(agent("--kiro", "--models", "a,b", backend="kiro"))
    session = await rt.new_session()
    assert session.models == ("a", "b")
    assert session.current_model == "a"
    await session.set_model("b")
    assert session.current_model == "b"
    frame = next(f for f in recorder.frames() if f.get("method") == "session/set_model")
    assert frame["params"] == {"sessionId": session.session_id, "modelId": "b"}
    assert "session/set_config_option" not in recorder.methods()


async def test_set_model_falls_back_to_set_model_on_method_not_found(start, agent, recorder) -> None:
    rt = await start(agent("--kiro", "--models", "a,b", "--config-options", "a,b", backend="kiro"))
    session = await rt.new_session()
    assert session.model_config_id == "model"
    await session.set_model("b")
    assert session.current_model == "b"
    methods = [m for m in recorder.methods() if m.startswith("session/set_")]
    assert methods == ["session/set_config_option", "session/set_model"]


async def test_model_not_advertised_is_unavailable(start, agent, recorder) -> None:
    rt = await start(agent("--models", "a,b"))
    session = await rt.new_session()
    with pytest.raises(AcpModelUnavailable) as info:
        await session.set_model("gpt-imaginary")
    exc = info.value
    assert exc.model == "gpt-imaginary"
    assert exc.available == ("a", "b")
    assert exc.transient is False
    assert session.current_model == "a"
    assert not [m for m in recorder.methods() if m.startswith("session/set_")]  # refused before sending
    verdict = classify(exc)
    assert verdict.kind == "model_not_entitled"
    assert "gpt-imaginary" in verdict.prose
