"""`make run`, exactly as the README says: the dashboard comes up on 127.0.0.1:8787 with the demo
agent, answers one prompt over HTTP, and a SIGINT shuts everything down with exit code 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE = "http://127.0.0.1:8787"
AGENTS_ON_PATH = ("kiro-cli", "claude-agent-acp", "codex-acp")


def _http(method: str, path: str, body: dict[str, str] | None = None, timeout: float = 5.0) -> bytes:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(BASE + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return bytes(response.read())


def _until(check, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except (OSError, urllib.error.URLError, ValueError) as exc:
            last, result = exc, None
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last error: {last!r})")


def _relay(make: psutil.Process) -> psutil.Process:
    relays = [p for p in make.children(recursive=True) if "acp-relay" in " ".join(p.cmdline()[:2])
              and "demo-agent" not in p.cmdline()]
    assert relays, "make run started no acp-relay process"
    return relays[0]


@pytest.mark.skipif(any(__import__("shutil").which(a) for a in AGENTS_ON_PATH),
                    reason="a real agent is installed on PATH; make run would pick it instead of the demo")
def test_make_run_serves_the_dashboard_answers_a_prompt_and_exits_cleanly_on_sigint(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    log = (tmp_path / "make-run.log").open("wb")
    make = subprocess.Popen(["make", "--no-print-directory", "run"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _until(lambda: _http("GET", "/") and True, 90, "the dashboard page")
        _http("POST", "/api/conversations/makerun/messages", {"text": "hello", "id": "makerun-1"})

        def answered() -> bool:
            status = json.loads(_http("GET", "/api/conversations/makerun/status"))
            return bool(status.get("session_id")) and not status.get("busy")

        _until(answered, 30, "the demo agent's answer")
        relay = _relay(psutil.Process(make.pid))
        agents = [p for p in relay.children(recursive=True)]
        assert agents, "the relay started no agent process"
        os.killpg(make.pid, signal.SIGINT)  # what Ctrl-C in the terminal does: the whole group
        relay.wait(timeout=30)
        make.wait(timeout=30)  # make itself reports "Interrupt"; the relay's own exit is below
        _, alive = psutil.wait_procs(agents, timeout=10)
        assert not alive, f"agent processes left behind: {alive}"
        output = (tmp_path / "make-run.log").read_text(errors="replace")
        assert "agent: demo" in output  # the relay says which agent it uses
        assert "acp-relay: stopped cleanly" in output  # printed only on the clean path, before exit 0
        assert "Traceback" not in output
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
        log.close()
