"""A real relay process killed with SIGKILL in the middle of a turn, then started again.

The relay runs as its own process (a small runner script written into ``tmp_path``): the real
engine on a file-backed store, the scripted agent with ``--state-dir`` (so a new agent process can
``session/load``) and a MemorySurface that appends every send and edit to a JSON-lines file, which
is how the test sees what the person would see.

Turn 1 waits on an approval nobody answers (relay 1 asks); the relay is killed while it waits.
Relay 2 allows tools without asking, so the replayed turn completes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from core.engine import twoway_wording as tw
from core.store import Store

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "tests" / "fakes" / "acp_agent.py"
HANG_GUARD_S = 30.0
SCRIPT = "text part one\npermission p1\ntext done"

RUNNER = r'''
import asyncio, itertools, json, os, sys
sys.path.insert(0, {root!r})
from core.config import RelayConfig
from core.engine.surface import Capabilities, InboundMessage
from core.lifecycle import Lifecycle
from core.plugin import SurfaceSettings
from core.store import Store
from tests.fakes.memory_surface import MemorySurface, StoredMessage, attaching

config_path, out_path, *messages = [a for a in sys.argv[1:] if not a.startswith("--")]


class FileSurface(MemorySurface):
    """Every send and edit is also appended to a JSON-lines file (what the person sees). Like a
    platform, it still has the messages an earlier relay posted (read back from that file)."""

    def load(self):
        if not os.path.exists(out_path):
            return
        with open(out_path, encoding="utf-8") as f:
            for line in f:
                entry = json.loads(line)
                if entry["method"] == "send":
                    self.messages[entry["id"]] = StoredMessage(entry["id"], "memory:c1", entry["text"],
                                                               self.render(entry["text"]), reply_to=entry["reply_to"])
                elif entry["method"] == "edit" and entry["id"] in self.messages:
                    self.messages[entry["id"]].text = entry["text"]
                    self.messages[entry["id"]].rendered = self.render(entry["text"])
                elif entry["method"] == "delete":
                    self.messages.pop(entry["id"], None)

    async def delete(self, key, message_id):
        await super().delete(key, message_id)
        self.log(method="delete", id=message_id)

    async def typing(self, key, active, *, origin=None):
        await super().typing(key, active, origin=origin)
        if not active and "--slow-typing-off" in sys.argv:
            await asyncio.sleep(3)  # a platform slow to clear the indicator (one more Slack call)

    def log(self, **entry):
        with open(out_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    async def send(self, key, message, *, buttons=(), reply_to=None):
        mid = await super().send(key, message, buttons=buttons, reply_to=reply_to)
        self.log(method="send", id=mid, text=message.markdown, reply_to=reply_to, buttons=len(buttons))
        return mid

    async def edit(self, key, message_id, message, *, buttons=()):
        await super().edit(key, message_id, message, buttons=buttons)
        self.log(method="edit", id=message_id, text=message.markdown, buttons=len(buttons))


async def main():
    with open(config_path, encoding="utf-8") as f:
        cfg = RelayConfig.model_validate(json.load(f))
    store = Store.open(cfg.store.path)
    relay = Lifecycle(cfg, store, cancel_wait_s=5.0)
    engine = relay.engine
    surface = FileSurface(capabilities=Capabilities(max_message_length=4096, edit_interval_s=0.05))
    surface._ids = itertools.count(os.getpid() * 1000)  # platform message ids never repeat
    surface.load()
    await relay.launch("memory", attaching(surface, ["u1"]), settings=SurfaceSettings(enabled=True))
    await relay.start()
    for raw in messages:
        mid, text = raw.split(":", 1)
        await engine.handle_message(InboundMessage("memory", "memory:c1", "u1", text, mid))
    if "--until-idle" not in sys.argv:
        await asyncio.Event().wait()  # relay 1 runs until it is killed
    def idle():
        convs = engine.conversations.values()
        return all(not c.busy and not c.queue for c in convs) and not store.pending_outbound()
    while not idle():
        await asyncio.sleep(0.02)
    await relay.close()
    surface.log(method="exit")

asyncio.run(main())
'''


def write_config(tmp: Path, n: int, tool_gate: str) -> Path:
    args = [str(AGENT), "--record", str(tmp / "record.jsonl"), "--state-dir", str(tmp / "agent-state"),
            "--env-dump", str(tmp / f"agent-{n}.json"),
            "--ignore-eof"]  # like claude-agent-acp and codex-acp: a closed stdin does not end it
    config = {
        "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(tmp), "tool_gate": tool_gate}},
        "store": {"path": str(tmp / "relay.db")},
        "timeouts": {"approval_s": 600},
        "retry": {"attempts": 3, "budget_s": 10, "base_delay_s": 0.05},
    }
    path = tmp / f"config-{n}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def shown(out: Path) -> dict[str, dict[str, Any]]:
    """Each platform message's latest state, by id."""
    state: dict[str, dict[str, Any]] = {}
    for entry in lines(out):
        if entry["method"] == "send":
            state[entry["id"]] = dict(entry)
        elif entry["method"] == "edit":
            state[entry["id"]].update(text=entry["text"], buttons=entry["buttons"])
        elif entry["method"] == "delete":
            del state[entry["id"]]
    return state


def wait_for(pred: Any, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not pred():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_relay_killed_mid_turn_resumes_the_same_session_and_loses_nothing(tmp_path: Path) -> None:
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER.format(root=str(ROOT)), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    record = tmp_path / "record.jsonl"
    agent_pids: list[int] = []
    relay1 = subprocess.Popen([sys.executable, str(runner), str(write_config(tmp_path, 1, "ask")), str(out),
                               f"m1:{SCRIPT}"], cwd=tmp_path)
    relay2: subprocess.Popen[bytes] | None = None
    try:
        wait_for(lambda: any("part one" in m["text"] for m in shown(out).values())
                 and any(m["buttons"] for m in shown(out).values()), "relay 1 streams and asks for approval")
        agent1 = json.loads((tmp_path / "agent-1.json").read_text(encoding="utf-8"))["pid"]
        agent_pids.append(agent1)
        relay1.send_signal(signal.SIGKILL)
        relay1.wait(timeout=HANG_GUARD_S)
        # Its own process group, and it may ignore stdin EOF: the kernel's parent-death signal
        # is what ends it (nothing in this test kills it).
        wait_for(lambda: gone(agent1), "the agent of the killed relay ends on its own")

        with Store.open(tmp_path / "relay.db") as store:
            rec = store.get_conversation("memory:c1")
            assert [r.message_id for r in store.unfinished_inbound()] == ["m1"]
        assert rec is not None and rec.session_id
        sid = rec.session_id

        # The platform redelivers m1 (its offset was never committed) and the person wrote again.
        relay2 = subprocess.Popen([sys.executable, str(runner), str(write_config(tmp_path, 2, "allow")),
                                   str(out), f"m1:{SCRIPT}", "m2:text second message", "--until-idle"],
                                  cwd=tmp_path)
        assert relay2.wait(timeout=HANG_GUARD_S) == 0
        agent_pids.append(json.loads((tmp_path / "agent-2.json").read_text(encoding="utf-8"))["pid"])
    finally:
        for proc in (relay1, relay2):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        for pid in agent_pids:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)

    assert lines(out)[-1]["method"] == "exit"
    assert all(gone(pid) for pid in agent_pids), "no agent process is left behind"

    frames = lines(record)
    prompts = [f for f in frames if f.get("method") == "session/prompt"]
    texts = ["\n".join(b["text"] for b in f["params"]["prompt"]) for f in prompts]
    assert texts == [SCRIPT, SCRIPT, "text second message"], "m1 replayed once, m2 after it, no duplicate"
    assert {f["params"]["sessionId"] for f in prompts} == {sid}, "every turn ran on the same ACP session"
    loads = [f["params"]["sessionId"] for f in frames if f.get("method") == "session/load"]
    assert loads == [sid], "relay 2 restored the session with session/load"
    assert sum(1 for f in frames if f.get("method") == "session/new") == 1

    with Store.open(tmp_path / "relay.db") as store:
        rec = store.get_conversation("memory:c1")
        assert store.unfinished_inbound() == [], "every message the person sent was answered"
        assert store.pending_outbound() == []
    assert rec is not None and rec.session_id == sid

    final = shown(out)
    m1 = [m for m in final.values() if m.get("reply_to") == "m1"]
    receipt = ("Queued", tw.receipt_outcome("answering"))  # m2 waited behind m1: its receipt is not its answer
    m2 = [m for m in final.values() if m.get("reply_to") == "m2" and not m["text"].startswith(receipt)]
    assert any("done" in m["text"] and "permission:selected:allow-once" in m["text"] for m in m1)
    assert len(m2) == 1 and "second message" in m2[0]["text"]


class Relays:
    """Relay processes of one test, each killed or waited for; their agents never outlive the test."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.runner = tmp / "runner.py"
        self.runner.write_text(RUNNER.format(root=str(ROOT)), encoding="utf-8")
        self.out = tmp / "out.jsonl"
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, n: int, *args: str, tool_gate: str = "allow") -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, str(self.runner), str(write_config(self.tmp, n, tool_gate)),
                                 str(self.out), *args], cwd=self.tmp)
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes], n: int) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=HANG_GUARD_S)
        agent = json.loads((self.tmp / f"agent-{n}.json").read_text(encoding="utf-8"))["pid"]
        wait_for(lambda: gone(agent), "the killed relay's agent ends")

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def prompts(self) -> list[str]:
        frames = lines(self.tmp / "record.jsonl")
        return ["\n".join(b["text"] for b in f["params"]["prompt"]) for f in frames
                if f.get("method") == "session/prompt"]


LONG = "chunks 2000\nsleep 1.5\ntext  the end"  # about 11,000 characters: three messages of 4,096


def test_a_relay_killed_mid_answer_continues_it_in_the_same_messages(tmp_path: Path) -> None:
    relays = Relays(tmp_path)
    try:
        first = relays.start(1, f"m1:{LONG}")
        wait_for(lambda: len(shown(relays.out)) >= 3, "relay 1 streams the answer over three messages")
        relays.kill(first, 1)
        before = list(shown(relays.out))
        assert relays.start(2, f"m1:{LONG}", "--until-idle").wait(timeout=HANG_GUARD_S) == 0
    finally:
        relays.close()
    final = shown(relays.out)
    assert list(final)[: len(before)] == before, "the answer goes on in the messages the person saw"
    answer = "\n\n".join(m["text"] for m in final.values())
    assert answer.count("w0 ") == 1 and answer.count("w1999") == 1, "one copy of the answer, not two"
    assert answer.count("⏱") == 1 and "the end" in answer
    assert relays.prompts() == [LONG, LONG]


def test_a_crash_right_after_the_answer_was_shown_does_not_answer_it_again(tmp_path: Path) -> None:
    relays = Relays(tmp_path)
    script = "text the one answer"
    try:
        first = relays.start(1, f"m1:{script}", "--slow-typing-off")
        wait_for(lambda: any("⏱" in m["text"] for m in shown(relays.out).values()), "the final answer is shown")
        relays.kill(first, 1)  # while the working indicator is being cleared
        assert relays.start(2, f"m1:{script}", "--until-idle").wait(timeout=HANG_GUARD_S) == 0
    finally:
        relays.close()
    assert relays.prompts() == [script], "the agent was not asked again"
    assert [m["text"].split("\n\n")[0] for m in shown(relays.out).values()] == ["the one answer"]
