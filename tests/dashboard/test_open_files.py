"""``acp-relay run`` and its limit on open files, as a real process with the dashboard listening.

A burst of tabs needs a descriptor each, and many systems start a process with a soft limit of 1,024
under a far higher hard one: the relay lifts its soft limit to the hard one. Past the hard limit,
asyncio (CPython 3.11 to 3.13) logged every failed ``accept`` with a traceback, about 3,000 lines a
second and most of a core (measured before the fix: 22,429 lines and 3.6 s of CPU in 7 s). Now it is one
warning in words, and the relay accepts again once connections close.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import FAKE_AGENT_PATH

from .conftest import ROOT
from .test_dashboard_kill_restart import free_port, wait_for

HANG_GUARD_S = 30.0
TOKEN = "open-files-test-token-0123456789abc"
LIMITED = ("import os, resource, sys; "
           "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2]))); "
           "os.execv(sys.argv[3], sys.argv[3:])")
WARNING = "new connections wait: the relay has as many files and connections open as its limit allows"


@contextmanager
def relay(tmp: Path, port: int, soft: int, hard: int) -> Iterator[subprocess.Popen[bytes]]:
    """``acp-relay run`` with the dashboard on ``port``, started with these limits on open files."""
    (tmp / "work").mkdir(exist_ok=True)
    config = {"agents": {"fake": {"command": sys.executable, "args": [str(FAKE_AGENT_PATH)], "cwd": str(tmp / "work")}},
              "store": {"path": str(tmp / "relay.db")},
              "surfaces": {"dashboard": {"host": "127.0.0.1", "port": port}}}
    (tmp / "config.json").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_RELAY_")}
    env.update(HOME=str(tmp / "home"), XDG_STATE_HOME=str(tmp / "xdg"), PYTHONPATH=str(ROOT),
               ACP_RELAY_DASHBOARD_TOKEN=TOKEN)
    with open(tmp / "stderr.txt", "w", encoding="utf-8") as stderr:
        proc = subprocess.Popen(  # the limits set, then exec'd into acp-relay (same pid; no preexec_fn in a
            [sys.executable, "-c", LIMITED, str(soft), str(hard),  # test process that may have threads)
             str(Path(sys.executable).with_name("acp-relay")), "run", "--config", str(tmp / "config.json")],
            cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=HANG_GUARD_S)


def answers(port: int) -> bool:
    """The dashboard accepted a connection and answered it (any status: no token is sent)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def soft_limit(pid: int) -> int:
    [line] = [line for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
              if line.startswith("Max open files")]
    return int(line.split()[3])


def log_of(tmp: Path) -> str:
    path = tmp / "xdg" / "acp-relay" / "acp-relay.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_the_relay_lifts_its_soft_limit_on_open_files_to_the_hard_one(tmp_path: Path) -> None:
    port = free_port()
    with relay(tmp_path, port, soft=256, hard=4096) as proc:
        wait_for(lambda: answers(port), "the dashboard answers")
        assert soft_limit(proc.pid) == 4096
        proc.terminate()
        assert proc.wait(timeout=HANG_GUARD_S) == 0


def test_past_the_hard_limit_new_connections_wait_with_one_warning_and_are_accepted_again(tmp_path: Path) -> None:
    port = free_port()
    with relay(tmp_path, port, soft=64, hard=64) as proc:
        wait_for(lambda: answers(port), "the dashboard answers")
        crowd = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]  # the kernel queues them
        try:
            wait_for(lambda: WARNING in log_of(tmp_path), "the relay says it is out of descriptors")
        finally:
            for sock in crowd:
                sock.close()
        wait_for(lambda: answers(port), "the dashboard answers again once the crowd is gone")
        proc.terminate()
        assert proc.wait(timeout=HANG_GUARD_S) == 0
    log, stderr = log_of(tmp_path), (tmp_path / "stderr.txt").read_text(encoding="utf-8")
    assert log.count(WARNING) == 1, log[-2000:]
    for text in (log, stderr):
        assert "socket.accept() out of system resource" not in text and "Traceback" not in text, text[-2000:]
    assert "(64); they are accepted again as others close" in log
