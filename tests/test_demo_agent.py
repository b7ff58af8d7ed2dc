"""The demo agent as a real subprocess over stdio, driven with raw JSON-RPC frames."""

from __future__ import annotations

import json
import os
import queue
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.acp._dispatch import parse_refusal
from core.acp.types import RefusalInfo
from core.failures import classify

ROOT = Path(__file__).resolve().parent.parent
Frame = dict[str, Any]


class DemoAgent:
    """One ``demo_agent.main()`` process; frames it writes are read on a thread into a queue."""

    def __init__(self, state: Path, cwd: Path) -> None:
        env = {"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(state), "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from core.demo_agent import main; raise SystemExit(main())"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.frames: queue.Queue[Frame] = queue.Queue()
        self.next_id = 100
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.frames.put(json.loads(line))

    def write(self, frame: Frame) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **frame}) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: Frame) -> int:
        self.next_id += 1
        self.write({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def until_answer(self, req_id: int, timeout: float = 10.0) -> tuple[Frame, list[Frame]]:
        """Frames up to the answer to ``req_id``: (answer, what came before it)."""
        seen: list[Frame] = []
        deadline = time.monotonic() + timeout
        while True:
            frame = self.frames.get(timeout=max(0.01, deadline - time.monotonic()))
            if frame.get("id") == req_id and "method" not in frame:
                return frame, seen
            seen.append(frame)

    def call(self, method: str, params: Frame) -> Frame:
        answer, _ = self.until_answer(self.request(method, params))
        return answer

    def new_session(self) -> str:
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        return str(self.call("session/new", {"cwd": "/tmp", "mcpServers": []})["result"]["sessionId"])

    def prompt(self, sid: str, text: str) -> int:
        return self.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})

    def turn(self, sid: str, text: str) -> tuple[Frame, list[Frame]]:
        return self.until_answer(self.prompt(sid, text))

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(5)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return code


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[DemoAgent]:
    proc = DemoAgent(tmp_path / "state", tmp_path)
    yield proc
    proc.close()


def text_of(frames: list[Frame]) -> str:
    return "".join(f["params"]["update"]["content"]["text"] for f in frames
                   if f.get("method") == "session/update"
                   and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk")


def updates(frames: list[Frame], kind: str) -> list[Frame]:
    return [f["params"]["update"] for f in frames
            if f.get("method") == "session/update" and f["params"]["update"]["sessionUpdate"] == kind]


def test_initialize_and_new_session_advertise_the_demo_and_its_models(agent: DemoAgent) -> None:
    init = agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})["result"]
    assert init["protocolVersion"] == 1
    assert init["agentInfo"]["name"] == "acp-relay-demo"
    assert init["agentInfo"]["title"] == "acp-relay demo agent"
    assert init["agentCapabilities"]["loadSession"] is True
    new = agent.call("session/new", {"cwd": "/tmp", "mcpServers": []})["result"]
    assert new["models"]["currentModelId"] == "demo-fast"
    assert [m["modelId"] for m in new["models"]["availableModels"]] == ["demo-fast", "demo-careful"]
    (option,) = new["configOptions"]
    assert (option["category"], option["type"], option["currentValue"]) == ("model", "select", "demo-fast")


def test_a_plain_prompt_streams_markdown_that_says_it_is_a_demo(agent: DemoAgent) -> None:
    sid = agent.new_session()
    answer, frames = agent.turn(sid, "hello there")
    assert answer["result"] == {"stopReason": "end_turn"}
    text = text_of(frames)
    assert "demo agent" in text and "This is a demo" in text
    assert "```" in text and "`tool`" in text and "`refuse`" in text
    assert len(updates(frames, "agent_message_chunk")) > 10  # streamed in small pieces
    meta = [f for f in frames if f.get("method") == "_kiro.dev/metadata"]
    assert meta and meta[-1]["params"]["contextUsagePercentage"] > 0


def test_context_usage_grows_from_turn_to_turn(agent: DemoAgent) -> None:
    sid = agent.new_session()
    pcts = []
    for _ in range(2):
        _, frames = agent.turn(sid, "/compact")
        pcts.append(next(f for f in frames if f.get("method") == "_kiro.dev/metadata")
                    ["params"]["contextUsagePercentage"])
    assert pcts[1] > pcts[0]


@pytest.mark.parametrize(("option_id", "status", "word"), [("allow-once", "completed", "allowed"),
                                                            ("reject-once", "failed", "denied")])
def test_a_tool_call_asks_for_permission_and_reports_the_decision(
        agent: DemoAgent, tmp_path: Path, option_id: str, status: str, word: str) -> None:
    sid = agent.new_session()
    req = agent.prompt(sid, "please use a Tool")
    ask: Frame | None = None
    before: list[Frame] = []
    while ask is None:
        frame = agent.frames.get(timeout=5)
        if frame.get("method") == "session/request_permission":
            ask = frame
        else:
            before.append(frame)
    (call,) = updates(before, "tool_call")
    assert (call["kind"], call["title"], call["status"]) == ("execute", "echo hello > demo.txt", "pending")
    params = ask["params"]
    assert params["toolCall"]["toolCallId"] == call["toolCallId"]
    assert [o["kind"] for o in params["options"]] == ["allow_once", "allow_always", "reject_once"]
    agent.write({"id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": option_id}}})
    answer, frames = agent.until_answer(req)
    assert answer["result"] == {"stopReason": "end_turn"}
    assert updates(frames, "tool_call_update")[-1]["status"] == status
    assert word in text_of(frames)
    assert not (tmp_path / "demo.txt").exists()  # it only pretends


def test_a_plan_is_checked_off_step_by_step(agent: DemoAgent) -> None:
    sid = agent.new_session()
    answer, frames = agent.turn(sid, "make a plan")
    assert answer["result"]["stopReason"] == "end_turn"
    plans = [[e["status"] for e in u["entries"]] for u in updates(frames, "plan")]
    assert plans[0] == ["in_progress", "pending", "pending"]
    assert plans[-1] == ["completed", "completed", "completed"]
    assert len(plans) == 4


def test_refuse_sends_kiros_structured_refusal_then_ends_the_turn(agent: DemoAgent) -> None:
    sid = agent.new_session()
    answer, frames = agent.turn(sid, "please REFUSE this")
    assert answer["result"] == {"stopReason": "end_turn"}
    (meta,) = [f["params"] for f in frames if f.get("method") == "_kiro.dev/metadata" and "refusal" in f["params"]]
    assert meta["stopReason"] == "CONTENT_FILTERED" and meta["sessionId"] == sid
    assert parse_refusal(meta, "kiro") == RefusalInfo(
        "demo", "The demo agent declines this on purpose to show a refusal card.", "demo-careful")
    assert "declines this on purpose" in text_of(frames)


def test_flaky_fails_transiently_once_then_answers(agent: DemoAgent) -> None:
    sid = agent.new_session()
    first, frames = agent.turn(sid, "flaky please")
    assert first["error"]["code"] == -32603
    assert "ThrottlingException" in first["error"]["data"]
    assert text_of(frames) == ""  # nothing streamed: a retry repeats no side effect
    assert classify(first["error"], backend="kiro").transient
    second, frames = agent.turn(sid, "flaky please")
    assert second["result"] == {"stopReason": "end_turn"}
    assert "retry worked" in text_of(frames)


def test_fail_is_a_terminal_malformed_request(agent: DemoAgent) -> None:
    sid = agent.new_session()
    answer, _ = agent.turn(sid, "fail now")
    error = answer["error"]
    assert error["code"] == -32603 and "Improperly formed request" in error["data"]
    verdict = classify(error, backend="kiro")
    assert (verdict.kind, verdict.transient) == ("malformed", False)


def test_slow_streams_until_cancelled(agent: DemoAgent) -> None:
    sid = agent.new_session()
    req = agent.prompt(sid, "be slow")
    chunks = 0
    while chunks < 2:
        if agent.frames.get(timeout=5).get("method") == "session/update":
            chunks += 1
    agent.write({"method": "session/cancel", "params": {"sessionId": sid}})
    started = time.monotonic()
    answer, _ = agent.until_answer(req, timeout=5)
    assert answer["result"] == {"stopReason": "cancelled"}
    assert time.monotonic() - started < 2


def test_cancel_while_waiting_for_permission_ends_the_turn(agent: DemoAgent) -> None:
    sid = agent.new_session()
    req = agent.prompt(sid, "approve this")
    while agent.frames.get(timeout=5).get("method") != "session/request_permission":
        pass
    agent.write({"method": "session/cancel", "params": {"sessionId": sid}})
    answer, _ = agent.until_answer(req, timeout=5)
    assert answer["result"] == {"stopReason": "cancelled"}


def test_a_second_prompt_while_one_runs_is_refused(agent: DemoAgent) -> None:
    sid = agent.new_session()
    slow = agent.prompt(sid, "slow")
    busy, _ = agent.until_answer(agent.prompt(sid, "hello"))
    assert busy["error"]["data"] == "Prompt already in progress"
    agent.write({"method": "session/cancel", "params": {"sessionId": sid}})
    assert agent.until_answer(slow)[0]["result"]["stopReason"] == "cancelled"


def test_compact_reports_completion(agent: DemoAgent) -> None:
    sid = agent.new_session()
    answer, frames = agent.turn(sid, "/compact")
    assert answer["result"] == {"stopReason": "end_turn"}
    assert any(f.get("method") == "_kiro.dev/compaction/status" and f["params"]["status"] == "completed"
               for f in frames)
    assert text_of(frames) == "Compacted the conversation (demo)."


def test_models_switch_both_ways_and_unknown_ones_are_refused(agent: DemoAgent) -> None:
    sid = agent.new_session()
    assert agent.call("session/set_model", {"sessionId": sid, "modelId": "demo-careful"})["result"] == {}
    answer = agent.call("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "demo-fast"})
    assert answer["result"]["configOptions"][0]["currentValue"] == "demo-fast"
    assert agent.call("session/set_model", {"sessionId": sid, "modelId": "gpt-9"})["error"]["code"] == -32602
    assert agent.call("session/set_mode", {"sessionId": sid, "modeId": "default"})["result"] == {}
    assert agent.call("session/nonsense", {})["error"]["code"] == -32601


def test_a_new_process_loads_the_session_and_replays_its_history(tmp_path: Path) -> None:
    first = DemoAgent(tmp_path / "state", tmp_path)
    sid = first.new_session()
    first.call("session/set_model", {"sessionId": sid, "modelId": "demo-careful"})
    first.turn(sid, "/compact")
    assert first.close() == 0
    second = DemoAgent(tmp_path / "state", tmp_path)
    try:
        second.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        answer, frames = second.until_answer(second.request("session/load", {
            "sessionId": sid, "cwd": "/tmp", "mcpServers": []}))
        assert answer["result"]["models"]["currentModelId"] == "demo-careful"
        assert [u["sessionUpdate"] for u in (f["params"]["update"] for f in frames)] == [
            "user_message_chunk", "agent_message_chunk"]
        assert updates(frames, "user_message_chunk")[0]["content"]["text"] == "/compact"
        missing = second.call("session/load", {"sessionId": "no-such-session", "cwd": "/tmp", "mcpServers": []})
        assert missing["error"]["code"] == -32002
        assert second.call("session/load", {"sessionId": "../etc", "cwd": "/", "mcpServers": []})["error"]
    finally:
        second.close()


def test_its_sessions_are_kept_private(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a desktop's: files 0644 and folders 0755 unless the agent says otherwise
    try:
        demo = DemoAgent(tmp_path / "state", tmp_path)
    finally:
        os.umask(old)
    try:
        demo.turn(demo.new_session(), "a prompt that stays on this machine")
    finally:
        demo.close()
    folder = tmp_path / "state" / "acp-relay" / "demo-sessions"
    files = list(folder.iterdir())
    assert files and {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o600}
    assert {stat.S_IMODE(d.stat().st_mode) for d in (folder, folder.parent, folder.parent.parent)} == {0o700}
