#!/usr/bin/env python3
"""Scripted fake ACP agent for tests (stdlib only, run as a real subprocess).

    python tests/fakes/acp_agent.py [flags]

Speaks NDJSON JSON-RPC 2.0 on stdin/stdout (one JSON object per line), protocolVersion 1, like a
real ACP agent (claude-agent-acp, codex-acp, kiro-cli acp). stderr carries free-form log lines.

Methods
-------
initialize
    -> {protocolVersion: 1, agentCapabilities: {loadSession, promptCapabilities: {image: true,
    audio: false, embeddedContext: true}, mcpCapabilities}, agentInfo: {name, title, version},
    authMethods}. loadSession is true unless --no-load; authMethods is [] unless --auth-env.
    agentInfo.name is "fake-acp-agent" ("kiro-cli" with --kiro, NAME with --agent-name NAME).
authenticate {methodId}
    With --auth-env VAR: methodId "var-auth" succeeds ({}) when VAR is set (non-empty) in the agent's
    environment, else -32000 "Authentication required". Any other methodId: -32602.
session/new {cwd, mcpServers}
    -> {sessionId: uuid4, modes: {currentModeId: "default", availableModes: [default, plan, auto]},
    models?: {currentModelId, availableModels: [{modelId, name}]}   (only with --models a,b)
    configOptions?: [{id: "model", name: "Model", category: "model", type: "select",
                      currentValue, options: [{value, name}]}]     (only with --config-options a,b)}
    With --auth-env and no successful authenticate yet: -32000 "Authentication required".
session/load {sessionId, cwd, mcpServers}
    Replays the session's history as session/update notifications (user_message_chunk for user
    prompts, agent_message_chunk for the agent's streamed text) BEFORE answering; then
    --load-replay N synthetic frames (alternating user/agent chunks "replay <i>"). --load-delay S
    sleeps S seconds before each replayed frame. The result is like session/new's without sessionId.
    Unknown session -> -32002 "Resource not found" (data {"uri": sessionId}).
    --no-load -> -32601. --kiro: params._meta["_kiro.dev/session_file"] is required, otherwise the
    load is ignored and answered -32002. Sessions are looked up in memory, then in --state-dir.
session/prompt {sessionId, prompt: [content blocks]}
    Runs the prompt script (below). One prompt per session at a time: a concurrent second one gets
    -32603 message "Prompt already in progress" (data is the same string). Unknown session: -32002.
session/close {sessionId}  (only with --close or --sessions, else -32601)
    Ends the session's running prompt as a cancel would, then closes it: until a session/load reopens
    it (its history is kept), a prompt or a switch in it is -32002. Unknown session: -32002.
session/cancel {sessionId} (notification)
    The running prompt ends promptly with {"stopReason": "cancelled"}; a pending
    session/request_permission (or `request`) it sent is abandoned (a late answer is ignored).
session/set_mode {sessionId, modeId}  -> {} (unknown modeId: -32602)
session/set_model {sessionId, modelId} (Kiro legacy) -> {} ; needs --models (else -32601),
    unknown modelId: -32602.
session/set_config_option {sessionId, configId, value} -> {configOptions: [...]}; needs
    --config-options (else -32602 for an unknown configId); with --kiro always -32601.
session/list {cwd?, cursor?} (only with --sessions) -> {sessions: [{sessionId, cwd, title, updatedAt}],
    nextCursor?}: every session this process (and --state-dir) knows, newest first, filtered by cwd,
    --list-page N a page (the cursor is the offset as a string).
session/resume {sessionId, cwd, mcpServers} (only with --sessions) -> like session/load's answer, with no
    history replayed (it reopens a closed session). Unknown session -> -32002.
Anything else (requests) -> -32601 "Method not found". Unknown notifications are ignored.
A line that is not JSON -> -32700 (id null); a JSON value that is not a request -> -32600.
Answers to requests the agent never sent (or abandoned) are ignored.

Flags
-----
--no-load              agentCapabilities.loadSession false; session/load -> -32601.
--close                agentCapabilities.sessionCapabilities {"close": {}}; session/close (above).
--no-images            promptCapabilities.image false (report_images still counts what arrives).
--on-compact SCRIPT    run SCRIPT (lines separated by newlines) when the prompt is "/compact".
--protocol-version N   answer initialize with protocolVersion N (default 1).
--not-logged-in        after reading the first stdin line, write "error: You are not logged in,
                       please log in with kiro-cli login" to stderr and exit 1 (initialize is never
                       answered).
--noise                non-JSON debug lines on stdout at start (plus the lines `42`, `[1,2]` and
                       `{"no":"jsonrpc"}`) and one "[fake-agent debug] ..." line before every frame.
--ignore-eof           do not exit on stdin EOF; keep sleeping (running prompts keep going).
                       Without it the process exits 0 as soon as stdin reaches EOF.
--ignore-sigterm       SIGTERM is ignored (SIG_IGN); only SIGKILL ends the process.
--stderr-flood BYTES   write BYTES bytes of stderr lines at startup, in one go, BEFORE reading stdin
                       (so an agent whose stderr is not drained never answers initialize).
--auth-env VAR         advertise authMethods [{"type": "env_var", "id": "var-auth", "name": "Use VAR",
                       "vars": [{"name": VAR}]}] and require authenticate (see above).
--models a,b           session/new returns legacy `models` (current = first); ``id=Name`` gives a model
                       a name of its own (qwen-code: "$runtime|openai|x(openai)" named "x").
--config-options a,b   session/new returns a `configOptions` model select option (current = first).
--kiro                 agentInfo name "kiro-cli"; session/new answers _meta["_kiro.dev/session_file"] and
                       session/load needs it back;
                       session/set_config_option -> -32601.
--agent-name NAME      agentInfo.name NAME (a real agent's, e.g. "@agentclientprotocol/codex-acp").
--record FILE          append every frame received from the client (parsed JSON, one per line;
                       undecodable lines as {"_invalid": text}) BEFORE handling it.
--turn-log FILE        append {"at": time.time(), "pid", "event": "start"|"end", "session", "text": the prompt's
                       first line} when each prompt turn starts and ends (who answered what, and when).
--state-dir DIR        persist sessions (history, mode, model) and fail_times counters in DIR, so a
                       new agent process can session/load a session made by an earlier one.
--env-dump FILE        write {"env": os.environ, "cwd": ..., "pid": ..., "argv": ...} as JSON at start.
--load-delay S         seconds to sleep before each replayed frame of session/load.
--new-delay S          seconds to sleep before answering session/new (claude-agent-acp takes 0.4 s).
--load-replay N        N extra synthetic replay frames in session/load (after the real history).
--copilot              shaped like Copilot CLI 1.0 (`copilot --acp`): mode ids are URLs ending #agent
                       (current), #plan, #autopilot; configOptions carry `mode` (category mode) and
                       `allow_all` (category permissions, "off"/"on"), both settable with
                       session/set_config_option; permission requests carry the title "Running command"
                       and the tool's title only as toolCall.rawInput.command.
--locked-modes         session/set_mode answers -32603 "mode is locked" (an agent that cannot be
                       switched back).
--sessions             agentCapabilities.sessionCapabilities {list, resume, close} (claude-agent-acp
                       0.101, codex-acp 2.6) and those three methods.
--list-page N          session/list answers N sessions a page (default 50).
--commands a:desc,b    after session/new, /load and /resume: available_commands_update with these
                       commands (name, description).
--commands-after S     ... S seconds after answering, not at once (claude-agent-acp: 1-30 ms after).
--effort               a configOption `effort` (category thought_level; low, medium, high).
--steering             initialize answers _meta.steering.supported true; _session/steering
                       {sessionId, prompt} answers {"outcome": "injected"} while a prompt runs (its
                       text is handed to a waiting `wait_steer`) and {"outcome": "promptRequired"}
                       when idle. Without the flag _session/steering is -32601.

Prompt scripts
--------------
The prompt's text (its text content blocks joined with "\\n") is a script when the first word of
its first non-empty line is a verb below; otherwise the agent streams "echo: <text>" as one
agent_message_chunk and answers end_turn (so "hello" or "/compact" just echo). In a script, every
non-empty line is a step; an unknown verb answers the prompt with -32602 naming the line. Steps
run in order; session/cancel is honoured between steps and inside waits (sleep, hang, permission,
request, chunks), ending the turn with stopReason "cancelled". Without a `stop` step the answer
is {"stopReason": "end_turn"}. "<json>" arguments are the rest of the line parsed as JSON.

text <words>            agent_message_chunk with exactly <words> (rest of the line).
thought <words>         agent_thought_chunk.
chunks <N>              N agent_message_chunks "w0 ", "w1 ", ... in order.
tool <id> <kind> <title words>
                        tool_call {toolCallId: id, title, kind, status: "pending", content: []}.
tool_update <id> <status> [text]
                        tool_call_update {toolCallId, status[, content: [{type: "content",
                        content: {type: "text", text}}]]} (only the changed fields).
permission <id>         session/request_permission {sessionId, toolCall: {toolCallId, title, kind,
                        status: "pending"}, options: [allow-once/allow_once "Allow",
                        allow-always/allow_always "Always Allow", reject/reject_once "Reject"]};
                        waits for the answer, then streams "permission:<outcome>:<optionId or ->"
                        (outcome "selected" or "cancelled"; "error" with the error code in place of
                        the optionId if the client answered with an error), then tool_call_update
                        status "completed" if an allow_* option was selected, else "failed".
permission <id> quiet   the same, but nothing at all is sent after the answer (an agent that fails
                        right after asking).
run <id> <kind> <title words>
                        a tool run WITHOUT asking (opencode's default permissions, Copilot after
                        allow-all): tool_call pending, tool_call_update in_progress, then
                        tool_call_update completed with the text "ran: <title>". Kind "-" sends no kind.
mode <modeId>           the agent switches its own mode: current_mode_update {currentModeId}, and (with
                        --copilot) a config_option_update with every config option.
allow_all <on|off>      the agent turns its own `allow_all` option (category permissions) on or off and
                        sends config_option_update with every config option; from then on the session
                        has that option (settable with session/set_config_option).
allow_all_after <on|off>
                        Copilot's `/allow-all on`: answer {"stopReason": "end_turn"} at once, THEN switch
                        `allow_all` and send config_option_update 0.2 s later (after the turn ended); ends the script.
plan <a>|<b>|<c>        plan update; entry prefix "x:" = completed, ">:" = in_progress, else pending.
usage <used> <size> [<amount> <currency>]
                        usage_update {used, size[, cost: {amount, currency}]} (cost is cumulative).
title <words>           session_info_update {title, updatedAt} (kept: session/list shows it).
notice <severity> <title words>[ | <description words>]
                        notice {severity, title[, description]}.
compaction <id> <status> [<summary words>]
                        compaction_update {compactionId, status}; with words, first a
                        compaction_summary_chunk with them.
commands <a:desc,b>     available_commands_update now.
kiro_meta <json>        notification `_kiro.dev/metadata`, params = json object + sessionId.
ext <method> [<json>]   any notification, params = json (default {}).
update <json>           raw session/update {sessionId, update: json}.
sleep <seconds>         sleep (cancellable).
hang                    wait until session/cancel, then stopReason "cancelled".
deaf [words]            ignore session/cancel: stream the words (if any), then never answer this prompt
                        (an agent that does not stop).
error <code> <message words>
                        answer the prompt with that JSON-RPC error (no data); ends the script.
error_data <code> <json {"message": ..., "data": ...}>
                        answer with {code, message, data} (data may be any JSON; omitted if absent).
fail_times <key> <N> <code> <json {"message", "data"}>
                        the first N times <key> is seen (counted across this process, and across
                        processes with --state-dir) answer with that error; afterwards continue.
thread_status <type>    session_info_update {_meta: {codex: {threadStatus: {type}}}} (codex-acp 2.x).
system_error_times <key> <N> <words>
                        the first N times <key> is seen (like fail_times), fail as codex-acp 2.x does:
                        thread_status systemError, an agent_message_chunk "<words>\n\n", then
                        {"stopReason": "end_turn"} (no JSON-RPC error); afterwards continue.
empty_times <key> <N>   the first N times <key> is seen (like fail_times) answer {"stopReason":
                        "end_turn"} at once, with nothing streamed; afterwards continue.
die <code> [words]      write "fatal: dying as scripted" (or <words>) to stderr and exit with <code> immediately.
stderr <words>          write the line to stderr.
raw <text>              write <text> as a raw stdout line.
bigline <bytes>         one stdout line of exactly <bytes> bytes (plus "\\n") shaped like
                        {"jsonrpc":"2.0","method":"x","params":"aaaa..."}.
nonobject               write the stdout lines `42` and `[1,2]`.
request <method> [<json>]
                        send an agent->client request, wait for the answer, then stream
                        "response:<compact json of result>" or "response:<error code>".
kiro_interrupt          stream the chunk "Tool uses were interrupted, waiting for the next user
                        prompt" and NEVER answer the prompt (the session accepts a new prompt).
stop <reason>           answer {"stopReason": reason} now.
elicit <json>           elicitation/create {sessionId, mode: "form", message: json.message,
                        requestedSchema: json.schema[, toolCallId: json.toolCallId]}; waits for the answer, then streams
                        "elicit:<compact json of the result>" and a newline (or "elicit:error:<code>").
elicit_url <url> <message words>
                        elicitation/create in URL mode (elicitationId "e1"); streams "elicit:<json>".
elicit_url_completes <url> <message words>
                        the same, and 0.3 s later (the person signed in elsewhere) the notification
                        elicitation/complete {elicitationId: "e1"}, while the request still waits.
wait_steer              wait (cancellable) until a _session/steering message arrives for this turn,
                        then stream "steered:<its text>" (needs --steering).
link <path> [name]      agent_message_chunk with a resource_link to file://<path> (a relative path is
                        taken inside the session's cwd, so "../x" points outside it).
embed <name> <words>    agent_message_chunk with an embedded text resource file:///<name>.
image <path>            agent_message_chunk with an image block: the file's bytes, base64 (mimeType
                        image/png; the bytes are whatever the file holds).
diff <id> <json {"path", "oldText", "newText"}>
                        tool_call {toolCallId: id, kind: edit, status: completed, content: [diff]}
                        (a relative path is taken inside the session's cwd).
tool_link <id> <path>   tool_call_update {toolCallId, status: completed, content: [{type: content,
                        content: resource_link}]}.
report_images           stream "images:<N>", N = number of image blocks in the prompt.

Every step may name a value from the environment of the agent's PARENT (the relay), read from
/proc/<parent pid>/environ as an agent running as the relay's user can: ``{parent_env:NAME}`` is the
whole value, ``{parent_env:NAME[a:b]}`` a slice of it (so one secret can be streamed across chunks);
an unset NAME is the empty string.

History kept for session/load: the user's prompt text, and all agent_message_chunk text streamed in
the turn concatenated into one agent entry.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import signal
import sys
import threading
import time
import uuid

PROTOCOL_VERSION = 1
KIRO_INTERRUPT = "Tool uses were interrupted, waiting for the next user prompt"
NOT_LOGGED_IN = "error: You are not logged in, please log in with kiro-cli login"
PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always Allow", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
MODES = [
    {"id": "default", "name": "Default", "description": "Ask before edits and commands"},
    {"id": "plan", "name": "Plan", "description": "Plan only, no changes"},
    {"id": "auto", "name": "Auto", "description": "Run tools without asking"},
]
COPILOT_MODE = "https://agentclientprotocol.com/protocol/session-modes#"
COPILOT_MODES = [
    {"id": COPILOT_MODE + "agent", "name": "Agent", "description": "Asks before edits and commands"},
    {"id": COPILOT_MODE + "plan", "name": "Plan", "description": "Plan only"},
    {"id": COPILOT_MODE + "autopilot", "name": "Autopilot", "description": "Runs until the task is done"},
]
VERBS = {
    "run",
    "mode",
    "allow_all",
    "allow_all_after",
    "text",
    "thought",
    "chunks",
    "tool",
    "tool_update",
    "permission",
    "plan",
    "usage",
    "title",
    "notice",
    "compaction",
    "commands",
    "kiro_meta",
    "ext",
    "update",
    "sleep",
    "hang",
    "deaf",
    "error",
    "error_data",
    "fail_times",
    "thread_status",
    "system_error_times",
    "empty_times",
    "die",
    "stderr",
    "raw",
    "bigline",
    "nonobject",
    "request",
    "kiro_interrupt",
    "stop",
    "report_images",
    "elicit",
    "elicit_url",
    "elicit_url_completes",
    "wait_steer",
    "link",
    "embed",
    "image",
    "diff",
    "tool_link",
}


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: object = None, has_data: bool = False):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.has_data = has_data or data is not None

    def to_obj(self) -> dict:
        err: dict = {"code": self.code, "message": self.message}
        if self.has_data:
            err["data"] = self.data
        return err


class Cancelled(Exception):
    pass


class Turn:
    def __init__(self, session: Session, req_id: object):
        self.session = session
        self.req_id = req_id
        self.cancel = threading.Event()
        self.agent_text: list[str] = []
        self.tools: dict[str, dict] = {}
        self.steered: list[str] = []
        self.steer_event = threading.Event()


class Session:
    def __init__(
        self,
        sid: str,
        cwd: str = "",
        history: list | None = None,
        mode: str = "default",
        model: str | None = None,
    ):
        self.id = sid
        self.cwd = cwd
        self.history: list[dict] = history or []
        self.mode = mode
        self.model = model
        self.allow_all: str | None = None  # Copilot's permissions option, once the session has one
        self.turn: Turn | None = None
        self.title = ""
        self.updated = time.time()
        self.effort = "medium"
        self.closed = False  # session/close: session/load or session/resume opens it again

    def to_json(self) -> dict:
        return {
            "sessionId": self.id,
            "cwd": self.cwd,
            "history": self.history,
            "mode": self.mode,
            "model": self.model,
            "allow_all": self.allow_all,
            "title": self.title,
            "updated": self.updated,
            "effort": self.effort,
        }


class Agent:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.out = sys.stdout.buffer
        self.out_lock = threading.Lock()
        self.rec_lock = threading.Lock()
        self.state_lock = threading.RLock()
        self.sessions: dict[str, Session] = {}
        self.sessions_lock = threading.Lock()
        self.pending: dict[object, dict] = {}
        self.pending_lock = threading.Lock()
        self.next_id = 0
        self.frame_no = 0
        self.authenticated = False
        self.fail_counts: dict[str, int] = {}
        named = [m.split("=", 1) for m in (args.models or "").split(",") if m]
        self.models = [pair[0] for pair in named]
        self.model_names = {pair[0]: pair[-1] for pair in named}
        self.config_models = [m for m in (args.config_options or "").split(",") if m]

    # ---------------------------------------------------------------- output
    def write_line(self, data: bytes) -> None:
        with self.out_lock:
            try:
                self.out.write(data + b"\n")
                self.out.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def send(self, obj: dict) -> None:
        line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
        with self.out_lock:
            try:
                if self.args.noise:
                    self.frame_no += 1
                    self.out.write(b"[fake-agent debug] sending frame %d\n" % self.frame_no)
                self.out.write(line + b"\n")
                self.out.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def respond(self, req_id: object, result: object) -> None:
        self.send({"jsonrpc": "2.0", "id": req_id, "result": result})

    def respond_error(self, req_id: object, err: RpcError) -> None:
        self.send({"jsonrpc": "2.0", "id": req_id, "error": err.to_obj()})

    def notify(self, method: str, params: object) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def update(self, sid: str, update: dict) -> None:
        self.notify("session/update", {"sessionId": sid, "update": update})

    @staticmethod
    def log(msg: str) -> None:
        try:
            sys.stderr.write(msg + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def record(self, obj: object) -> None:
        if not self.args.record:
            return
        with self.rec_lock, open(self.args.record, "a", encoding="utf-8") as f:
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")

    # ---------------------------------------------------------------- state
    def _state_path(self, *parts: str) -> str:
        return os.path.join(self.args.state_dir, *parts)

    def _write_json(self, path: str, obj: object) -> None:
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f)
        os.replace(tmp, path)

    def persist(self, s: Session) -> None:
        if not self.args.state_dir:
            return
        with self.state_lock:
            os.makedirs(self._state_path("sessions"), exist_ok=True)
            self._write_json(self._state_path("sessions", f"{s.id}.json"), s.to_json())

    def find_session(self, sid: object) -> Session | None:
        if not isinstance(sid, str):
            return None
        with self.sessions_lock:
            s = self.sessions.get(sid)
        if s is not None or not self.args.state_dir:
            return s
        if os.sep in sid or "/" in sid or sid.startswith("."):
            return None
        path = self._state_path("sessions", f"{sid}.json")
        try:
            with self.state_lock, open(path, encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, ValueError):
            return None
        s = Session(sid, d.get("cwd", ""), d.get("history") or [], d.get("mode") or "default", d.get("model"))
        s.allow_all = d.get("allow_all")
        s.title, s.updated, s.effort = d.get("title") or "", d.get("updated") or 0.0, d.get("effort") or "medium"
        with self.sessions_lock:
            return self.sessions.setdefault(sid, s)

    def bump_fail_count(self, key: str) -> int:
        with self.state_lock:
            if self.args.state_dir:
                os.makedirs(self.args.state_dir, exist_ok=True)
                path = self._state_path("fail_counts.json")
                try:
                    with open(path, encoding="utf-8") as f:
                        counts = json.load(f)
                except (OSError, ValueError):
                    counts = {}
                counts[key] = counts.get(key, 0) + 1
                self._write_json(path, counts)
                return counts[key]
            self.fail_counts[key] = self.fail_counts.get(key, 0) + 1
            return self.fail_counts[key]

    # ---------------------------------------------------------------- session payloads
    def modes(self) -> list[dict]:
        return COPILOT_MODES if self.args.copilot else MODES

    def session_extras(self, s: Session) -> dict:
        out: dict = {"modes": {"currentModeId": s.mode, "availableModes": self.modes()}}
        if self.models:
            out["models"] = {
                "currentModelId": s.model if s.model in self.models else self.models[0],
                "availableModels": [{"modelId": m, "name": self.model_names[m]} for m in self.models],
            }
        if self.config_models or self.args.copilot or s.allow_all is not None or self.args.effort:
            out["configOptions"] = self.config_options(s)
        return out

    def config_options(self, s: Session) -> list:
        out = []
        if self.args.copilot:
            out.append({"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": s.mode,
                        "options": [{"value": m["id"], "name": m["name"]} for m in COPILOT_MODES]})
        if s.allow_all is not None:
            out.append({"id": "allow_all", "name": "Allow all", "category": "permissions", "type": "select",
                        "currentValue": s.allow_all,
                        "options": [{"value": "off", "name": "Off"}, {"value": "on", "name": "On"}]})
        if self.args.effort:
            out.append({"id": "effort", "name": "Effort", "category": "thought_level", "type": "select",
                        "currentValue": s.effort,
                        "options": [{"value": v, "name": v.capitalize()} for v in ("low", "medium", "high")]})
        if not self.config_models:
            return out
        cur = s.model if s.model in self.config_models else self.config_models[0]
        return [
            *out,
            {
                "id": "model",
                "name": "Model",
                "description": "AI model to use",
                "category": "model",
                "type": "select",
                "currentValue": cur,
                "options": [{"value": m, "name": m} for m in self.config_models],
            }
        ]

    # ---------------------------------------------------------------- agent -> client requests
    def call_client(self, method: str, params: object, turn: Turn) -> dict:
        """Send a request to the client and wait for the answer; raises Cancelled on session/cancel."""
        slot: dict = {"event": threading.Event(), "msg": None}
        with self.pending_lock:
            req_id = self.next_id
            self.next_id += 1
            self.pending[req_id] = slot
        self.send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
        try:
            while not slot["event"].wait(0.005):
                if turn.cancel.is_set():
                    raise Cancelled()
        finally:
            with self.pending_lock:
                self.pending.pop(req_id, None)
        return slot["msg"]

    # ---------------------------------------------------------------- dispatch
    def handle_line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            return
        try:
            msg = json.loads(text)
        except ValueError:
            self.record({"_invalid": text})
            self.log(f"fake-agent: unparsable line: {text[:200]!r}")
            self.respond_error(None, RpcError(-32700, "Parse error"))
            return
        self.record(msg)
        if not isinstance(msg, dict):
            self.respond_error(None, RpcError(-32600, "Invalid Request"))
            return
        method = msg.get("method")
        if isinstance(method, str):
            if "id" in msg:
                self.handle_request(msg["id"], method, msg.get("params"))
            else:
                self.handle_notification(method, msg.get("params"))
        elif "id" in msg and ("result" in msg or "error" in msg):
            with self.pending_lock:
                slot = self.pending.get(msg["id"])
            if slot is None:
                self.log(f"fake-agent: ignoring answer to unknown/abandoned request {msg['id']!r}")
                return
            slot["msg"] = msg
            slot["event"].set()
        else:
            self.respond_error(msg.get("id"), RpcError(-32600, "Invalid Request"))

    def handle_notification(self, method: str, params: object) -> None:
        if method == "session/cancel":
            sid = params.get("sessionId") if isinstance(params, dict) else None
            s = self.find_session(sid)
            if s is not None and s.turn is not None:
                s.turn.cancel.set()
        # anything else ($/cancel_request, extensions): ignored

    def handle_request(self, req_id: object, method: str, params: object) -> None:
        if not isinstance(params, dict):
            params = {}
        try:
            if method == "session/prompt":
                turn = self.start_turn(req_id, params)
                threading.Thread(target=self.run_turn, args=(turn, params), daemon=True).start()
                return
            if method == "session/load":
                if self.args.no_load:
                    raise RpcError(-32601, "Method not found", method)
                threading.Thread(
                    target=self.guarded, args=(req_id, self.do_load, params), daemon=True
                ).start()
                return
            offered = self.args.sessions or (method == "session/close" and self.args.close)
            if method in SESSION_METHODS and not offered:
                raise RpcError(-32601, "Method not found", method)
            handler = {
                "session/list": self.do_list,
                "session/resume": self.do_resume,
                "session/close": self.do_close,
                "initialize": self.do_initialize,
                "authenticate": self.do_authenticate,
                "session/new": self.do_new,
                "session/set_mode": self.do_set_mode,
                "session/set_model": self.do_set_model,
                "session/set_config_option": self.do_set_config_option,
                "_session/steering": self.do_steering,
            }.get(method)
            if handler is None:
                raise RpcError(-32601, "Method not found", method)
            result = handler(params)
            self.respond(req_id, result)
            if method in ("session/new", "session/resume"):
                self.announce_commands(str(result.get("sessionId") or params.get("sessionId")))
        except RpcError as e:
            self.respond_error(req_id, e)
        except Exception as e:  # pragma: no cover - a bug in the fake
            self.respond_error(req_id, RpcError(-32603, "Internal error", f"fake agent bug: {e!r}"))

    def guarded(self, req_id: object, fn, params: dict) -> None:
        try:
            self.respond(req_id, fn(params))
        except RpcError as e:
            self.respond_error(req_id, e)
        except Exception as e:  # pragma: no cover
            self.respond_error(req_id, RpcError(-32603, "Internal error", f"fake agent bug: {e!r}"))

    # ---------------------------------------------------------------- methods
    def do_initialize(self, params: dict) -> dict:
        auth_methods = []
        if self.args.auth_env:
            var = self.args.auth_env
            auth_methods.append(
                {
                    "type": "env_var",
                    "id": "var-auth",
                    "name": f"Use {var}",
                    "description": f"Requires setting the `{var}` environment variable.",
                    "vars": [{"name": var}],
                }
            )
        if self.args.kiro:
            info = {"name": "kiro-cli", "title": "Kiro", "version": "1.20.0"}
        elif self.args.agent_name:
            info = {"name": self.args.agent_name, "title": "Fake ACP Agent", "version": "0.1.0"}
        else:
            info = {"name": "fake-acp-agent", "title": "Fake ACP Agent", "version": "0.1.0"}
        result = {
            "protocolVersion": self.args.protocol_version,
            "agentCapabilities": {
                **({"sessionCapabilities": {"list": {}, "resume": {}, "close": {}}} if self.args.sessions
                   else {"sessionCapabilities": {"close": {}}} if self.args.close else {}),
                "loadSession": not self.args.no_load,
                "promptCapabilities": {"image": not self.args.no_images, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
            },
            "agentInfo": info,
            "authMethods": auth_methods,
        }
        if self.args.steering:
            result["_meta"] = {"steering": {"supported": True}}
        return result

    def do_steering(self, params: dict) -> dict:
        if not self.args.steering:
            raise RpcError(-32601, "Method not found", "_session/steering")
        s = self._session(params)
        turn = s.turn
        if turn is None:
            return {"outcome": "promptRequired"}
        blocks = params.get("prompt") if isinstance(params.get("prompt"), list) else []
        turn.steered.append("\n".join(b.get("text", "") for b in blocks if isinstance(b, dict)))
        turn.steer_event.set()
        return {"outcome": "injected"}

    def do_authenticate(self, params: dict) -> dict:
        if not self.args.auth_env or params.get("methodId") != "var-auth":
            raise RpcError(-32602, "Invalid params", f"unknown auth method {params.get('methodId')!r}")
        if not os.environ.get(self.args.auth_env):
            raise RpcError(
                -32000, "Authentication required", f"environment variable {self.args.auth_env} is not set"
            )
        self.authenticated = True
        return {}

    def require_auth(self) -> None:
        if self.args.auth_env and not self.authenticated:
            raise RpcError(-32000, "Authentication required")

    def do_new(self, params: dict) -> dict:
        self.require_auth()
        if self.args.new_delay > 0:
            time.sleep(self.args.new_delay)
        s = Session(str(uuid.uuid4()), str(params.get("cwd", "")))
        if self.args.copilot:
            s.mode, s.allow_all = COPILOT_MODES[0]["id"], "off"
        if self.models:
            s.model = self.models[0]
        elif self.config_models:
            s.model = self.config_models[0]
        with self.sessions_lock:
            self.sessions[s.id] = s
        self.persist(s)
        result = {"sessionId": s.id, **self.session_extras(s)}
        if self.args.kiro:
            # Modelled: the agent names the session file a later session/load must carry back.
            result["_meta"] = {"_kiro.dev/session_file": f"~/.kiro/sessions/{s.id}.json"}
        return result

    def do_load(self, params: dict) -> dict:
        self.require_auth()
        sid = params.get("sessionId")
        if self.args.kiro:
            meta = params.get("_meta")
            if not (isinstance(meta, dict) and meta.get("_kiro.dev/session_file")):
                self.log("fake-agent(kiro): session/load without _meta._kiro.dev/session_file ignored")
                raise RpcError(-32002, "Resource not found", {"uri": sid})
        s = self.find_session(sid)
        if s is None:
            raise RpcError(-32002, "Resource not found", {"uri": sid})
        frames = []
        for entry in list(s.history):
            kind = "user_message_chunk" if entry.get("role") == "user" else "agent_message_chunk"
            frames.append((kind, entry.get("text", "")))
        for i in range(self.args.load_replay):
            frames.append(("user_message_chunk" if i % 2 == 0 else "agent_message_chunk", f"replay {i}"))
        for kind, text in frames:
            if self.args.load_delay > 0:
                time.sleep(self.args.load_delay)
            self.update(s.id, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})
        if params.get("cwd"):
            s.cwd = str(params["cwd"])
        self.announce_commands(s.id)
        s.closed = False
        return self.session_extras(s)

    def all_sessions(self) -> list[Session]:
        found: dict[str, Session] = {}
        if self.args.state_dir and os.path.isdir(self._state_path("sessions")):
            for name in os.listdir(self._state_path("sessions")):
                if name.endswith(".json"):
                    s = self.find_session(name[:-5])
                    if s is not None:
                        found[s.id] = s
        with self.sessions_lock:
            found.update(self.sessions)
        return sorted(found.values(), key=lambda s: s.updated, reverse=True)

    def do_list(self, params: dict) -> dict:
        self.require_auth()
        cwd = params.get("cwd")
        sessions = [s for s in self.all_sessions() if not cwd or s.cwd == cwd]
        start = int(params.get("cursor") or 0)
        page = sessions[start:start + self.args.list_page]
        out: dict = {"sessions": [
            {"sessionId": s.id, "cwd": s.cwd, "title": s.title or None,
             "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.updated))} for s in page]}
        if start + self.args.list_page < len(sessions):
            out["nextCursor"] = str(start + self.args.list_page)
        return out

    def do_resume(self, params: dict) -> dict:
        self.require_auth()
        s = self.find_session(params.get("sessionId"))
        if s is None:
            raise RpcError(-32002, "Resource not found", {"uri": params.get("sessionId")})
        if params.get("cwd"):
            s.cwd = str(params["cwd"])
        s.closed = False
        return self.session_extras(s)

    def do_close(self, params: dict) -> dict:
        """The session is let go: listed still, but a prompt to it fails until it is loaded or resumed."""
        s = self.find_session(params.get("sessionId"))
        if s is None:
            raise RpcError(-32002, "Resource not found", {"uri": params.get("sessionId")})
        if s.turn is not None:
            s.turn.cancel.set()
        s.closed = True
        return {}

    def announce_commands(self, sid: str) -> None:
        if not self.args.commands:
            return
        update = {"sessionUpdate": "available_commands_update", "availableCommands": commands_of(self.args.commands)}
        if self.args.commands_after > 0:  # listed a while after the answer, on a timer of its own
            threading.Timer(self.args.commands_after, self.update, (sid, update)).start()
        else:
            self.update(sid, update)

    def _session(self, params: dict) -> Session:
        s = self.find_session(params.get("sessionId"))
        if s is None or s.closed:
            raise RpcError(-32002, "Resource not found", {"uri": params.get("sessionId")})
        return s

    def do_set_mode(self, params: dict) -> dict:
        s = self._session(params)
        mode = params.get("modeId")
        if self.args.locked_modes:
            raise RpcError(-32603, "Internal error", "mode is locked")
        if mode not in {m["id"] for m in self.modes()}:
            raise RpcError(-32602, "Invalid params", f"unknown mode {mode!r}")
        s.mode = mode
        self.persist(s)
        return {}

    def do_set_model(self, params: dict) -> dict:
        if not self.models:
            raise RpcError(-32601, "Method not found", "session/set_model")
        s = self._session(params)
        model = params.get("modelId")
        if model not in self.models:
            raise RpcError(-32602, "Invalid params", f"unknown model {model!r}")
        s.model = model
        self.persist(s)
        return {}

    def do_set_config_option(self, params: dict) -> dict:
        if self.args.kiro:
            raise RpcError(-32601, "Method not found", "session/set_config_option")
        s = self._session(params)
        value = params.get("value")
        if params.get("configId") == "allow_all" and s.allow_all is not None and value in ("on", "off"):
            s.allow_all = value
            return {"configOptions": self.config_options(s)}
        if params.get("configId") == "effort" and self.args.effort and value in ("low", "medium", "high"):
            s.effort = value
            self.persist(s)
            return {"configOptions": self.config_options(s)}
        if params.get("configId") == "mode" and self.args.copilot and value in {m["id"] for m in COPILOT_MODES}:
            s.mode = value
            return {"configOptions": self.config_options(s)}
        if params.get("configId") != "model" or not self.config_models:
            raise RpcError(-32602, "Invalid params", f"unknown config option {params.get('configId')!r}")
        value = params.get("value")
        if value not in self.config_models:
            raise RpcError(-32602, "Invalid params", f"unknown value {value!r}")
        s.model = value
        self.persist(s)
        return {"configOptions": self.config_options(s)}

    # ---------------------------------------------------------------- prompt turns
    def start_turn(self, req_id: object, params: dict) -> Turn:
        self.require_auth()
        s = self._session(params)
        with self.sessions_lock:
            if s.turn is not None:
                raise RpcError(-32603, "Prompt already in progress", "Prompt already in progress")
            s.turn = Turn(s, req_id)
            return s.turn

    def end_turn(self, turn: Turn) -> None:
        s = turn.session
        s.updated = time.time()
        if turn.agent_text:
            s.history.append({"role": "agent", "text": "".join(turn.agent_text)})
            turn.agent_text = []
        with self.sessions_lock:
            if s.turn is turn:
                s.turn = None
        self.persist(s)

    def chunk(self, turn: Turn, text: str, kind: str = "agent_message_chunk") -> None:
        if kind == "agent_message_chunk":
            turn.agent_text.append(text)
        self.update(turn.session.id, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})

    def run_turn(self, turn: Turn, params: dict) -> None:
        blocks = params.get("prompt") if isinstance(params.get("prompt"), list) else []
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        images = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "image")
        prompt_text = "\n".join(t for t in texts if isinstance(t, str))
        turn.session.history.append({"role": "user", "text": prompt_text})
        if not turn.session.title:  # like claude-agent-acp: the first prompt names the session
            turn.session.title = prompt_text.strip().splitlines()[0][:40] if prompt_text.strip() else ""
        self.persist(turn.session)
        self.log_turn("start", turn, prompt_text)
        try:
            result = self.run_script(turn, prompt_text, images)
        except Cancelled:
            result = {"stopReason": "cancelled"}
        except RpcError as e:
            self.end_turn(turn)
            self.respond_error(turn.req_id, e)
            return
        except Exception as e:  # pragma: no cover
            self.end_turn(turn)
            self.respond_error(turn.req_id, RpcError(-32603, "Internal error", f"fake agent bug: {e!r}"))
            return
        self.end_turn(turn)
        self.log_turn("end", turn, prompt_text)
        if result is not None:
            self.respond(turn.req_id, result)

    def log_turn(self, event: str, turn: Turn, text: str) -> None:
        if not self.args.turn_log:
            return
        entry = {"at": time.time(), "pid": os.getpid(), "event": event, "session": turn.session.id,
                 "text": text.split("\n", 1)[0]}
        with self.rec_lock, open(self.args.turn_log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def run_script(self, turn: Turn, text: str, images: int) -> dict | None:
        if self.args.on_compact and text.strip().startswith("/compact"):
            text = self.args.on_compact  # how this agent answers the relay's "/compact"
        lines = [ln for ln in text.splitlines() if ln.strip()]
        first = lines[0].split(None, 1)[0] if lines else ""
        if first not in VERBS:
            self.chunk(turn, f"echo: {text}")
            return {"stopReason": "end_turn"}
        for lineno, line in enumerate(lines, 1):
            if turn.cancel.is_set():
                raise Cancelled()
            line = PARENT_ENV.sub(parent_env, line)
            parts = line.strip().split(" ", 1)
            verb, rest = parts[0], (parts[1] if len(parts) > 1 else "")
            try:
                out = self.step(turn, verb, rest, images)
            except (ValueError, IndexError, KeyError, TypeError) as e:
                raise RpcError(
                    -32602, "Invalid params", f"fake agent: bad script line {lineno}: {line!r}: {e}"
                ) from e
            if out is not None:
                return out.get("result")
        if turn.cancel.is_set():
            raise Cancelled()
        return {"stopReason": "end_turn"}

    def step(self, turn: Turn, verb: str, rest: str, images: int) -> dict | None:
        """Run one script step. Returns {"result": ...} to end the turn (None result = no answer)."""
        sid = turn.session.id
        if verb == "text":
            self.chunk(turn, rest)
        elif verb == "thought":
            self.chunk(turn, rest, "agent_thought_chunk")
        elif verb == "chunks":
            for i in range(int(rest)):
                if turn.cancel.is_set():
                    raise Cancelled()
                self.chunk(turn, f"w{i} ")
        elif verb == "tool":
            tid, kind, title = [*rest.split(" ", 2), "", ""][:3]
            turn.tools[tid] = {"title": title, "kind": kind}
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": tid,
                    "title": title,
                    "kind": kind,
                    "status": "pending",
                    "content": [],
                },
            )
        elif verb == "tool_update":
            bits = rest.split(" ", 2)
            upd: dict = {"sessionUpdate": "tool_call_update", "toolCallId": bits[0], "status": bits[1]}
            if len(bits) > 2 and bits[2]:
                upd["content"] = [{"type": "content", "content": {"type": "text", "text": bits[2]}}]
            self.update(sid, upd)
        elif verb == "run":
            tid, kind, title = [*rest.split(" ", 2), "", ""][:3]
            call = {"sessionUpdate": "tool_call", "toolCallId": tid, "title": title, "status": "pending", "content": []}
            if kind != "-":
                call["kind"] = kind
            self.update(sid, call)
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "in_progress"})
            done = [{"type": "content", "content": {"type": "text", "text": f"ran: {title}"}}]
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed",
                              "content": done})
        elif verb == "mode":
            turn.session.mode = rest.strip()
            self.update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": turn.session.mode})
            if self.args.copilot:
                self.update(sid, {"sessionUpdate": "config_option_update",
                                  "configOptions": self.config_options(turn.session)})
        elif verb == "allow_all":
            turn.session.allow_all = rest.strip()
            self.update(sid, {"sessionUpdate": "config_option_update",
                              "configOptions": self.config_options(turn.session)})
        elif verb == "allow_all_after":
            turn.session.allow_all = rest.strip()
            self.respond(turn.req_id, {"stopReason": "end_turn"})
            time.sleep(0.2)  # Copilot's update came 2 ms later: past the client's end of the turn
            self.update(sid, {"sessionUpdate": "config_option_update",
                              "configOptions": self.config_options(turn.session)})
            return {"result": None}  # answered already
        elif verb == "permission":
            tid, _, quiet = rest.strip().partition(" ")
            self.permission(turn, tid, quiet=quiet.strip() == "quiet")
        elif verb == "plan":
            entries = []
            for item in rest.split("|"):
                status = "pending"
                if item.startswith("x:"):
                    status, item = "completed", item[2:]
                elif item.startswith(">:"):
                    status, item = "in_progress", item[2:]
                entries.append({"content": item, "priority": "medium", "status": status})
            self.update(sid, {"sessionUpdate": "plan", "entries": entries})
        elif verb == "usage":
            words = rest.split()
            update = {"sessionUpdate": "usage_update", "used": int(words[0]), "size": int(words[1])}
            if len(words) >= 4:
                update["cost"] = {"amount": float(words[2]), "currency": words[3]}
            self.update(sid, update)
        elif verb == "title":
            turn.session.title = rest.strip()
            turn.session.updated = time.time()
            self.persist(turn.session)
            self.update(sid, {"sessionUpdate": "session_info_update", "title": rest.strip(),
                              "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        elif verb == "notice":
            severity, _, words = rest.strip().partition(" ")
            title, _, description = words.partition(" | ")
            notice = {"sessionUpdate": "notice", "severity": severity, "title": title.strip()}
            if description.strip():
                notice["description"] = description.strip()
            self.update(sid, notice)
        elif verb == "compaction":
            parts = rest.split(" ", 2)
            if len(parts) > 2 and parts[2].strip():
                self.update(sid, {"sessionUpdate": "compaction_summary_chunk", "compactionId": parts[0],
                                  "content": {"type": "text", "text": parts[2].strip()}})
            self.update(sid, {"sessionUpdate": "compaction_update", "compactionId": parts[0], "status": parts[1]})
        elif verb == "commands":
            self.update(sid, {"sessionUpdate": "available_commands_update",
                              "availableCommands": commands_of(rest.strip())})
        elif verb == "kiro_meta":
            params = json.loads(rest) if rest.strip() else {}
            self.notify("_kiro.dev/metadata", {**params, "sessionId": sid})
        elif verb == "ext":
            parts = rest.split(" ", 1)
            self.notify(parts[0], json.loads(parts[1]) if len(parts) > 1 and parts[1].strip() else {})
        elif verb == "update":
            self.update(sid, json.loads(rest))
        elif verb == "sleep":
            if turn.cancel.wait(float(rest)):
                raise Cancelled()
        elif verb == "hang":
            turn.cancel.wait()
            raise Cancelled()
        elif verb == "deaf":
            if rest:  # streamed in the same step, so no cancel can slip in before the deafness
                self.chunk(turn, rest)
            threading.Event().wait()  # nothing ever sets it: this turn never ends
        elif verb == "error":
            code, _, message = rest.partition(" ")
            raise RpcError(int(code), message)
        elif verb == "error_data":
            code, _, payload = rest.partition(" ")
            obj = json.loads(payload)
            raise RpcError(int(code), str(obj.get("message", "")), obj.get("data"), "data" in obj)
        elif verb == "fail_times":
            key, n, code, payload = rest.split(" ", 3)
            if self.bump_fail_count(key) <= int(n):
                obj = json.loads(payload)
                raise RpcError(int(code), str(obj.get("message", "")), obj.get("data"), "data" in obj)
        elif verb == "thread_status":
            self.thread_status(sid, rest.strip())
        elif verb == "system_error_times":
            key, n, words = rest.split(" ", 2)
            if self.bump_fail_count(key) <= int(n):
                self.thread_status(sid, "systemError")
                self.chunk(turn, f"{words}\n\n")
                return {"result": {"stopReason": "end_turn"}}
        elif verb == "empty_times":
            key, n = rest.split()
            if self.bump_fail_count(key) <= int(n):
                return {"result": {"stopReason": "end_turn"}}
        elif verb == "die":
            self.end_turn(turn)
            code, _, words = rest.partition(" ")
            self.log(words or "fatal: dying as scripted")
            try:
                sys.stdout.flush()
            finally:
                os._exit(int(code or 1))
        elif verb == "stderr":
            self.log(rest)
        elif verb == "raw":
            self.write_line(rest.encode())
        elif verb == "bigline":
            self.write_line(bigline(int(rest)))
        elif verb == "nonobject":
            self.write_line(b"42")
            self.write_line(b"[1,2]")
        elif verb == "request":
            parts = rest.split(" ", 1)
            params = json.loads(parts[1]) if len(parts) > 1 and parts[1].strip() else {}
            msg = self.call_client(parts[0], params, turn)
            if "error" in msg:
                err = msg["error"]
                self.chunk(turn, f"response:{err.get('code') if isinstance(err, dict) else err}")
            else:
                self.chunk(turn, "response:" + json.dumps(msg.get("result"), separators=(",", ":")))
        elif verb == "kiro_interrupt":
            self.chunk(turn, KIRO_INTERRUPT)
            return {"result": None}
        elif verb == "stop":
            return {"result": {"stopReason": rest.strip()}}
        elif verb == "report_images":
            self.chunk(turn, f"images:{images}")
        elif verb in ("elicit", "elicit_url", "elicit_url_completes"):
            if verb == "elicit":
                spec = json.loads(rest)
                params = {"sessionId": sid, "mode": "form", "message": spec.get("message", ""),
                          "requestedSchema": spec.get("schema", {})}
                if spec.get("toolCallId"):
                    params["toolCallId"] = spec["toolCallId"]
            else:
                url, _, words = rest.partition(" ")
                params = {"sessionId": sid, "mode": "url", "elicitationId": "e1", "url": url, "message": words}
            if verb == "elicit_url_completes":
                threading.Timer(0.3, self.notify, ("elicitation/complete", {"elicitationId": "e1"})).start()
            msg = self.call_client("elicitation/create", params, turn)
            if "error" in msg:
                err = msg["error"]
                self.chunk(turn, f"elicit:error:{err.get('code') if isinstance(err, dict) else err}")
            else:
                answer = json.dumps(msg.get("result"), separators=(",", ":"), sort_keys=True)
                self.chunk(turn, f"elicit:{answer}\n")
        elif verb == "wait_steer":
            while not turn.steered:
                if turn.cancel.wait(0.01):
                    raise Cancelled()
            self.chunk(turn, "steered:" + turn.steered.pop(0))
        elif verb in ("link", "embed", "image"):
            self.chunk_block(turn, self.file_block(turn, verb, rest))
        elif verb == "diff":
            tid, _, payload = rest.partition(" ")
            d = json.loads(payload)
            d["path"] = self.in_cwd(turn, d["path"])
            self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": f"Edit {d['path']}",
                              "kind": "edit", "status": "completed", "content": [{"type": "diff", **d}]})
        elif verb == "tool_link":
            tid, _, path = rest.partition(" ")
            block = self.file_block(turn, "link", path)
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed",
                              "content": [{"type": "content", "content": block}]})
        else:
            raise ValueError(f"unknown verb {verb!r}")
        return None

    @staticmethod
    def in_cwd(turn: Turn, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(turn.session.cwd or os.getcwd(), path)

    def file_block(self, turn: Turn, verb: str, rest: str) -> dict:
        if verb == "embed":
            name, _, words = rest.partition(" ")
            return {"type": "resource", "resource": {"uri": f"file:///{name}", "mimeType": "text/plain",
                                                     "text": words}}
        path, _, name = rest.partition(" ")
        full = self.in_cwd(turn, path)
        if verb == "image":
            with open(full, "rb") as f:
                data = base64.b64encode(f.read()).decode()
            return {"type": "image", "mimeType": "image/png", "data": data, "uri": "file://" + full}
        return {"type": "resource_link", "uri": "file://" + full, "name": name or os.path.basename(full)}

    def chunk_block(self, turn: Turn, block: dict) -> None:
        self.update(turn.session.id, {"sessionUpdate": "agent_message_chunk", "content": block})

    def thread_status(self, sid: str, kind: str) -> None:
        meta = {"codex": {"threadStatus": {"type": kind}}}
        self.update(sid, {"sessionUpdate": "session_info_update", "_meta": meta})

    def permission(self, turn: Turn, tid: str, *, quiet: bool = False) -> None:
        tool = turn.tools.get(tid, {"title": tid, "kind": "other"})
        call = {"toolCallId": tid, "title": tool["title"], "kind": tool["kind"], "status": "pending"}
        if self.args.copilot:  # the command only in rawInput, under a title that says nothing
            call.update(title="Running command", rawInput={"command": tool["title"], "description": "run it"})
        params = {"sessionId": turn.session.id, "toolCall": call, "options": PERMISSION_OPTIONS}
        msg = self.call_client("session/request_permission", params, turn)
        allowed = False
        if "error" in msg:
            err = msg["error"]
            label = f"error:{err.get('code') if isinstance(err, dict) else err}"
        else:
            res = msg.get("result")
            outcome = res.get("outcome") if isinstance(res, dict) else None
            outcome = outcome if isinstance(outcome, dict) else {}
            kind = outcome.get("outcome", "?")
            opt = outcome.get("optionId")
            label = f"{kind}:{opt if kind == 'selected' and opt is not None else '-'}"
            if kind == "selected":
                allowed = any(
                    o["optionId"] == opt and o["kind"].startswith("allow") for o in PERMISSION_OPTIONS
                )
        if quiet:
            return
        self.chunk(turn, f"permission:{label}")
        self.update(
            turn.session.id,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tid,
                "status": "completed" if allowed else "failed",
            },
        )


PARENT_ENV = re.compile(r"\{parent_env:([A-Za-z_][A-Za-z0-9_]*)(?:\[(-?\d*):(-?\d*)\])?\}")


def parent_env(match: re.Match) -> str:
    """The value a ``{parent_env:NAME[a:b]}`` placeholder stands for (see the module docstring)."""
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            pairs = [item.partition(b"=") for item in f.read().split(b"\0") if item]
    except OSError:
        return ""
    value = {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}.get(match.group(1), "")
    if match.group(2) is None:
        return value
    start, end = (int(x) if x else None for x in match.group(2, 3))
    return value[start:end]


SESSION_METHODS = frozenset({"session/list", "session/resume", "session/close"})


def commands_of(spec: str) -> list[dict]:
    """``a:desc,b`` -> [{name: a, description: desc}, {name: b, description: ""}]."""
    out = []
    for item in spec.split(","):
        name, _, desc = item.partition(":")
        if name.strip():
            out.append({"name": name.strip(), "description": desc.strip(), "input": None})
    return out


def bigline(size: int) -> bytes:
    head, tail = b'{"jsonrpc":"2.0","method":"x","params":"', b'"}'
    if size < len(head) + len(tail):
        return b"a" * size
    return head + b"a" * (size - len(head) - len(tail)) + tail


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Scripted fake ACP agent (see module docstring)")
    p.add_argument("--no-load", action="store_true")
    p.add_argument("--no-images", action="store_true")
    p.add_argument("--close", action="store_true")
    p.add_argument("--on-compact", default="")
    p.add_argument("--protocol-version", type=int, default=PROTOCOL_VERSION)
    p.add_argument("--not-logged-in", action="store_true")
    p.add_argument("--noise", action="store_true")
    p.add_argument("--ignore-eof", action="store_true")
    p.add_argument("--ignore-sigterm", action="store_true")
    p.add_argument("--stderr-flood", type=int, default=0, metavar="BYTES")
    p.add_argument("--auth-env", metavar="VAR")
    p.add_argument("--models", metavar="A,B")
    p.add_argument("--config-options", metavar="A,B")
    p.add_argument("--kiro", action="store_true")
    p.add_argument("--agent-name", metavar="NAME")
    p.add_argument("--record", metavar="FILE")
    p.add_argument("--turn-log", metavar="FILE")
    p.add_argument("--state-dir", metavar="DIR")
    p.add_argument("--env-dump", metavar="FILE")
    p.add_argument("--load-delay", type=float, default=0.0, metavar="S")
    p.add_argument("--new-delay", type=float, default=0.0, metavar="S")
    p.add_argument("--load-replay", type=int, default=0, metavar="N")
    p.add_argument("--copilot", action="store_true")
    p.add_argument("--locked-modes", action="store_true")
    p.add_argument("--sessions", action="store_true")
    p.add_argument("--list-page", type=int, default=50, metavar="N")
    p.add_argument("--commands", default="", metavar="A:DESC,B")
    p.add_argument("--commands-after", type=float, default=0.0, metavar="S")
    p.add_argument("--effort", action="store_true")
    p.add_argument("--steering", action="store_true")
    return p.parse_args(argv)


def stderr_flood(nbytes: int) -> None:
    line = b"fake-agent stderr flood " + b"." * 100 + b"\n"
    err = sys.stderr.buffer
    written = 0
    while written < nbytes:
        chunk = line if nbytes - written >= len(line) else line[: nbytes - written]
        err.write(chunk)
        written += len(chunk)
    err.flush()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.env_dump:
        with open(args.env_dump, "w", encoding="utf-8") as f:
            json.dump({"env": dict(os.environ), "cwd": os.getcwd(), "pid": os.getpid(), "argv": sys.argv}, f)
    if args.stderr_flood > 0:
        stderr_flood(args.stderr_flood)
    stdin = sys.stdin.buffer
    if args.not_logged_in:
        stdin.readline()
        Agent.log(NOT_LOGGED_IN)
        return 1
    agent = Agent(args)
    if args.noise:
        for junk in (b"[fake-agent debug] starting up", b"42", b"[1,2]", b'{"no":"jsonrpc"}'):
            agent.write_line(junk)
    while True:
        line = stdin.readline()
        if not line:
            break
        try:
            agent.handle_line(line)
        except Exception as e:  # pragma: no cover - never let the reader die
            Agent.log(f"fake-agent: error handling line: {e!r}")
    if args.ignore_eof:
        Agent.log("fake-agent: stdin EOF ignored")
        while True:
            time.sleep(3600)
    return 0


if __name__ == "__main__":
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
