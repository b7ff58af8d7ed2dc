"""`make run`, exactly as the README says: the dashboard comes up on 127.0.0.1:8787 with the demo
agent and prints a login link; a newcomer opens the link (nobody gets in without it), the dashboard
answers one prompt, and a SIGINT shuts everything down with exit code 0."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE = "http://127.0.0.1:8787"
AGENTS_ON_PATH = ("kiro-cli", "claude-agent-acp", "codex-acp")


LINK = re.compile(r"^(http://127\.0\.0\.1:8787/login\?code=[\w-]+)$", re.M)
#: The newcomer's browser: it keeps the session cookie the login link's form gets.
BROWSER = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))


def _http(method: str, path: str, body: dict[str, str] | None = None, timeout: float = 5.0, *,
          form: dict[str, str] | None = None, opener: urllib.request.OpenerDirector = BROWSER) -> bytes:
    data, headers = None, {}
    if body is not None:
        data, headers = json.dumps(body).encode(), {"Content-Type": "application/json"}
    elif form is not None:
        data, headers = urllib.parse.urlencode(form).encode(), {"Content-Type": "application/x-www-form-urlencoded"}
    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    with opener.open(request, timeout=timeout) as response:
        return bytes(response.read())


def _status(path: str) -> int:
    """What anyone else on this machine gets: no cookie, no token."""
    try:
        _http("GET", path, opener=urllib.request.build_opener())
    except urllib.error.HTTPError as exc:
        return exc.code
    return 200


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
        link = _until(lambda: LINK.search((tmp_path / "make-run.log").read_text(errors="replace")), 90,
                      "the login link, alone on its line")[1]
        assert _status("/") == 401 and _status("/api/conversations/makerun/status") == 401
        page = _http("GET", link.removeprefix(BASE)).decode()  # what the newcomer opens
        code = re.search(r'name="code"\s+value="([\w-]+)"', page)
        assert code is not None, page
        assert 'id="composer"' in _http("POST", "/login", form={"code": code[1]}).decode()  # its form, sent
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
