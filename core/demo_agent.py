"""``acp-relay demo-agent``: a real ACP agent on stdio (NDJSON JSON-RPC 2.0) that runs no model.

It shows each feature of the relay, chosen by a keyword in the prompt (see ``HELP``); its tool call
only pretends. Sessions are kept in ``$XDG_STATE_HOME/acp-relay/demo-sessions`` (else
``~/.local/state/...``) so that a restarted relay can ``session/load`` them.
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import sys
import threading
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from core.private_files import private_file

__all__ = ["main"]

Json = dict[str, Any]

AGENT_INFO = {"name": "acp-relay-demo", "title": "acp-relay demo agent", "version": "0.1.0"}
MODELS = ("demo-fast", "demo-careful")
MODES = ({"id": "default", "name": "Default", "description": "Ask before running tools"},)
PERMISSION_OPTIONS = ({"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
                      {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                      {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"})
TOOL_TITLE = "echo hello > demo.txt"
REFUSAL = {"category": "demo", "recommendedModel": "demo-careful",
           "explanation": "The demo agent declines this on purpose to show a refusal card."}
THROTTLED = "Encountered an error in the response stream: ThrottlingException: Rate exceeded"
MALFORMED = ("Encountered an error in the response stream: Improperly formed request. "
             "(request_id: 0123456789abcdef)")
SLOW_WORDS = ("this", "answer", "arrives", "one", "word", "at", "a", "time", "so", "you", "can", "stop", "it")
_SESSION_METHODS = ("session/load", "session/set_mode", "session/set_model", "session/set_config_option")
_RE_KEYWORD = re.compile(r"\b(tool|approve|plan|refuse|flaky|fail|slow)", re.IGNORECASE)
#: How the relay puts a text file a person attached into the prompt (``core.engine.attached``).
_RE_ATTACHED = re.compile(r"^Attached file: (.+)$", re.MULTILINE)

HELP = """Hello! I am the **acp-relay demo agent** (model `{model}`). This is a demo: I run no model, \
read no files and change nothing on your machine. I answer by keyword, so you can try each feature:

- `tool` or `approve`: a tool call that asks for your approval
- `plan`: a plan, checked off step by step
- `refuse`: a refusal card
- `flaky`: a transient error; the relay retries and the answer arrives
- `fail`: an error that retrying cannot fix
- `slow`: a slow answer that you can stop
- `/compact`: compact the conversation
- attach a text file: I say which files reached me

```python
print("hello from the demo agent")
```
"""


class _RpcError(Exception):
    """A JSON-RPC error answer (``obj`` is the ``error`` member)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.obj: Json = {"code": code, "message": message, **({} if data is None else {"data": data})}


class _Cancelled(Exception):
    """``session/cancel`` arrived while the turn ran."""


@dataclass
class _Session:
    id: str
    model: str = MODELS[0]
    mode: str = "default"
    history: list[Json] = field(default_factory=list)
    flaky_failed: bool = False

    def __post_init__(self) -> None:
        self.cancel, self.busy, self.reply = threading.Event(), False, list[str]()

    def pause(self, seconds: float) -> None:
        if self.cancel.wait(seconds):
            raise _Cancelled

    def extras(self) -> Json:
        """Modes, legacy models and the model config option, as session/new and session/load answer."""
        avail = [{"modelId": m, "name": m} for m in MODELS]
        option = {"id": "model", "name": "Model", "category": "model", "type": "select",
                  "currentValue": self.model, "options": [{"value": m, "name": m} for m in MODELS]}
        return {"modes": {"currentModeId": self.mode, "availableModes": list(MODES)},
                "configOptions": [option], "models": {"currentModelId": self.model, "availableModels": avail}}


class _DemoAgent:
    def __init__(self, out: IO[bytes], directory: Path) -> None:
        self.out, self.dir, self.lock, self.next_id = out, directory, threading.Lock(), 0
        self.sessions: dict[str, _Session] = {}
        self.pending: dict[int, queue.SimpleQueue[Json]] = {}

    def send(self, obj: Json) -> None:
        line = json.dumps({"jsonrpc": "2.0", **obj}, ensure_ascii=False).encode() + b"\n"
        with self.lock:
            try:
                self.out.write(line)
                self.out.flush()
            except (OSError, ValueError):
                pass  # the client went away; stdin EOF ends the process

    def notify(self, method: str, params: Json) -> None:
        self.send({"method": method, "params": params})

    def update(self, s: _Session, update: Json) -> None:
        self.notify("session/update", {"sessionId": s.id, "update": update})

    def stream(self, s: _Session, text: str, size: int = 12, delay: float = 0.02) -> None:
        for chunk in (text[start:start + size] for start in range(0, len(text), size)):
            s.pause(delay)
            s.reply.append(chunk)
            content = {"type": "text", "text": chunk}
            self.update(s, {"sessionUpdate": "agent_message_chunk", "content": content})

    def handle(self, raw: bytes) -> None:
        try:
            msg = json.loads(raw)
        except ValueError:
            return self.send({"id": None, "error": {"code": -32700, "message": "Parse error"}})
        msg = msg if isinstance(msg, dict) else {}
        method, params = msg.get("method"), msg["params"] if isinstance(msg.get("params"), dict) else {}
        if not isinstance(method, str):  # an answer to session/request_permission
            if isinstance(msg.get("id"), int) and msg["id"] in self.pending:
                self.pending[msg["id"]].put(msg)
        elif "id" not in msg:  # session/cancel is the one notification the demo acts on
            if method == "session/cancel" and str(params.get("sessionId")) in self.sessions:
                self.sessions[str(params["sessionId"])].cancel.set()
        else:
            try:
                if method == "session/prompt":
                    self.start_prompt(msg["id"], params)
                else:
                    self.send({"id": msg["id"], "result": self.call(method, params)})
            except _RpcError as exc:
                self.send({"id": msg["id"], "error": exc.obj})

    def call(self, method: str, params: Json) -> Json:
        if method == "initialize":
            prompts = {"image": False, "audio": False, "embeddedContext": False}
            return {"protocolVersion": 1, "agentInfo": AGENT_INFO, "authMethods": [],
                    "agentCapabilities": {"loadSession": True, "promptCapabilities": prompts}}
        if method == "session/new":
            s = self.sessions.setdefault(sid := str(uuid.uuid4()), _Session(sid))
            self.save(s)
            return {"sessionId": s.id, **s.extras()}
        if method not in _SESSION_METHODS:
            raise _RpcError(-32601, "Method not found", method)
        s = self.session(params)
        result: Json = {}
        if method == "session/load":
            for entry in (e for e in s.history if e.get("text")):
                kind = "user_message_chunk" if entry.get("role") == "user" else "agent_message_chunk"
                self.update(s, {"sessionUpdate": kind, "content": {"type": "text", "text": entry["text"]}})
            return s.extras()
        if method == "session/set_mode":
            s.mode = self.choose(params.get("modeId"), tuple(m["id"] for m in MODES))
        elif method == "session/set_model":
            s.model = self.choose(params.get("modelId"), MODELS)
        else:  # session/set_config_option
            self.choose(params.get("configId"), ("model",))
            s.model = self.choose(params.get("value"), MODELS)
            result = {"configOptions": s.extras()["configOptions"]}
        self.save(s)
        return result

    @staticmethod
    def choose(value: Any, allowed: tuple[str, ...]) -> str:
        if value not in allowed:
            raise _RpcError(-32602, "Invalid params", f"unknown value {value!r} (choose from {allowed})")
        return str(value)

    def session(self, params: Json) -> _Session:
        sid = params.get("sessionId")
        if not isinstance(sid, str) or not sid or Path(sid).name != sid:
            raise _RpcError(-32002, "Resource not found", {"uri": sid})
        if sid not in self.sessions:
            try:
                data = json.loads((self.dir / f"{sid}.json").read_text(encoding="utf-8"))
                self.sessions[sid] = _Session(**data)
            except (OSError, ValueError, TypeError) as exc:
                raise _RpcError(-32002, "Resource not found", {"uri": sid}) from exc
        return self.sessions[sid]

    def save(self, s: _Session) -> None:
        try:
            tmp = self.dir / f"{s.id}.json.{threading.get_ident()}.tmp"
            private_file(tmp)  # the session's prompts: its owner's alone, as the relay's own files
            tmp.write_text(json.dumps(asdict(s)), encoding="utf-8")
            tmp.replace(self.dir / f"{s.id}.json")
        except OSError:
            pass  # a read-only home: the demo still works, its sessions stay in memory

    def start_prompt(self, req_id: Any, params: Json) -> None:
        s = self.session(params)
        if s.busy:
            raise _RpcError(-32603, "Internal error", "Prompt already in progress")
        blocks = params["prompt"] if isinstance(params.get("prompt"), list) else []
        text = "\n".join(b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))
        s.busy, s.reply, s.cancel = True, [], threading.Event()
        threading.Thread(target=self.run_turn, args=(req_id, s, text), daemon=True, name="demo-turn").start()

    def run_turn(self, req_id: Any, s: _Session, text: str) -> None:
        try:
            answer: Json = {"result": {"stopReason": self.script(s, text)}}
        except _Cancelled:
            answer = {"result": {"stopReason": "cancelled"}}
        except _RpcError as exc:
            answer = {"error": exc.obj}
        s.history += [{"role": "user", "text": text}, {"role": "agent", "text": "".join(s.reply)}]
        self.notify("_kiro.dev/metadata", {"sessionId": s.id, "turnDurationMs": 20,
                                           "contextUsagePercentage": min(95.0, 1.75 * len(s.history))})
        s.busy = False
        self.save(s)
        self.send({"id": req_id, **answer})

    def script(self, s: _Session, text: str) -> str:
        """Run the behaviour the prompt's keyword asks for; returns the stop reason."""
        words = {m.lower() for m in _RE_KEYWORD.findall(text)}
        if text.strip().lower().startswith("/compact"):
            self.stream(s, "Compacted the conversation (demo).")
            self.notify("_kiro.dev/compaction/status", {"sessionId": s.id, "status": "completed"})
        elif "refuse" in words:
            self.notify("_kiro.dev/metadata", {"sessionId": s.id, "stopReason": "CONTENT_FILTERED",
                                               "refusal": REFUSAL})
            self.stream(s, REFUSAL["explanation"])
        elif "fail" in words:
            raise _RpcError(-32603, "Internal error", MALFORMED)
        elif "flaky" in words:
            s.flaky_failed = not s.flaky_failed  # fail, then answer the relay's retry, and so on
            if s.flaky_failed:
                raise _RpcError(-32603, "Internal error", THROTTLED)
            self.stream(s, "The first try failed with a rate limit (on purpose); this retry worked.")
        elif "slow" in words:
            for i in range(120):
                self.stream(s, SLOW_WORDS[i % len(SLOW_WORDS)] + " ", size=20, delay=0.5)
        elif words & {"tool", "approve"}:
            self.tool(s)
        elif "plan" in words:
            self.plan(s)
        elif files := _RE_ATTACHED.findall(text):
            names = ", ".join(f"`{name}`" for name in files)
            self.stream(s, f"These files reached me as text: {names}. (A demo: I only name them.)")
        else:
            self.stream(s, HELP.format(model=s.model))
        return "end_turn"

    def tool(self, s: _Session) -> None:
        call = {"toolCallId": f"demo-{uuid.uuid4().hex[:8]}", "title": TOOL_TITLE, "kind": "execute",
                "status": "pending", "rawInput": {"command": TOOL_TITLE}}
        self.update(s, {"sessionUpdate": "tool_call", **call, "content": []})
        with self.lock:  # ask the client, then wait for its answer; session/cancel abandons the question
            self.next_id = req_id = self.next_id + 1
            self.pending[req_id] = box = queue.SimpleQueue[Json]()
        self.send({"id": req_id, "method": "session/request_permission",
                   "params": {"sessionId": s.id, "toolCall": call, "options": list(PERMISSION_OPTIONS)}})
        try:
            while box.empty():
                s.pause(0.05)
        finally:
            self.pending.pop(req_id, None)
        res = box.get().get("result")
        out = res["outcome"] if isinstance(res, dict) and isinstance(res.get("outcome"), dict) else {}
        if out.get("outcome") == "cancelled":
            raise _Cancelled
        upd = {"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"]}
        if out.get("outcome") == "selected" and str(out.get("optionId")).startswith("allow"):
            self.update(s, {**upd, "status": "completed", "content": [{"type": "content", "content": {
                "type": "text", "text": "hello (pretended: the demo agent wrote no file)"}}]})
            self.stream(s, "You **allowed** the tool call. I only pretended to run it: no file was written.")
        else:
            self.update(s, {**upd, "status": "failed"})
            self.stream(s, "You **denied** the tool call, so nothing ran.")

    def plan(self, s: _Session) -> None:
        steps = ("Read the question", "Sketch an answer", "Write it down")
        for done in range(len(steps) + 1):
            entries = [{"content": step, "priority": "medium",
                        "status": "completed" if i < done else "in_progress" if i == done else "pending"}
                       for i, step in enumerate(steps)]
            self.update(s, {"sessionUpdate": "plan", "entries": entries})
            s.pause(0.4)
        self.stream(s, "All three steps of the (demo) plan are done.")


def main() -> int:
    """Serve ACP on stdin/stdout until stdin closes."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    agent = _DemoAgent(sys.stdout.buffer, Path(base) / "acp-relay" / "demo-sessions")
    for line in sys.stdin.buffer:
        if line.strip():
            agent.handle(line)
    with agent.lock:  # turns still running write nothing more: a thread must not hold stdout at exit
        agent.out = io.BytesIO()
    return 0
