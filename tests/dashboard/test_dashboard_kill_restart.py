"""``acp-relay run`` with the dashboard, killed with SIGKILL while an answer streams into a tab, then
started again: the tab shows the answer once, finished in the message it had begun in (what a reload
of the page shows is the transcript file, read here directly), also when the kill came between the
transcript taking that message and the store noting it as the answer's."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.store import Store
from surfaces.dashboard.transcript import Entry, Transcript
from tests.conftest import FAKE_AGENT_PATH

from .conftest import ROOT

HANG_GUARD_S = 40.0
TAB = "tab-1"
TOKEN = "kill-restart-test-token-0123456789"  # the dashboard always wants one (a script sends it)
LONG = "chunks 300\nsleep 1.5\ntext  the end"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(tmp: Path, port: int) -> subprocess.Popen[bytes]:
    args = [str(FAKE_AGENT_PATH), "--record", str(tmp / "record.jsonl"), "--state-dir", str(tmp / "agent-state")]
    (tmp / "work").mkdir(exist_ok=True)
    config = {"agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(tmp / "work")}},
              "store": {"path": str(tmp / "relay.db")},
              "surfaces": {"dashboard": {"host": "127.0.0.1", "port": port}}}
    (tmp / "config.json").write_text(json.dumps(config))
    script = Path(sys.executable).with_name("acp-relay")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_RELAY_")}
    env.update(HOME=str(tmp / "home"), XDG_STATE_HOME=str(tmp / "xdg"), PYTHONPATH=str(ROOT),
               ACP_RELAY_DASHBOARD_TOKEN=TOKEN)
    return subprocess.Popen([str(script), "run", "--config", str(tmp / "config.json")], cwd=tmp, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def post(port: int, text: str, message_id: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    body = json.dumps({"text": text, "id": message_id}).encode()
    while True:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/conversations/{TAB}/messages", data=body,
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {TOKEN}"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                assert response.status == 202
                return
        except urllib.error.HTTPError:
            raise
        except OSError:  # not listening yet
            assert time.monotonic() < deadline, "the dashboard never listened"
            time.sleep(0.05)


def agent_messages(tmp: Path) -> list[Entry]:
    path = tmp / "relay-dashboard.db"  # beside the relay's store
    if not path.exists():
        return []
    transcript = Transcript.open(path)
    try:
        return [e for e in transcript.entries(TAB) if e.role == "agent"]
    finally:
        transcript.close()


def wait_for(pred: object, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


@contextmanager
def relays() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The relays a test starts (it appends them); one still running at the end is killed."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def kill(relay: subprocess.Popen[bytes]) -> None:
    relay.send_signal(signal.SIGKILL)
    relay.wait(timeout=HANG_GUARD_S)


def restart_until(tmp: Path, port: int, started: list[subprocess.Popen[bytes]], shows: str) -> None:
    """Start the relay again; stop it once a message of the tab shows ``shows`` (and a second copy would
    be on its way)."""
    second = start(tmp, port)
    started.append(second)
    wait_for(lambda: any(shows in e.text for e in agent_messages(tmp)), f"relay 2 shows {shows!r}")
    time.sleep(0.5)  # a second copy would be on its way by now
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=HANG_GUARD_S) == 0


def test_a_relay_killed_mid_answer_finishes_it_in_the_same_dashboard_message(tmp_path: Path) -> None:
    port = free_port()
    with relays() as started:
        started.append(first := start(tmp_path, port))
        post(port, LONG, "m1")
        wait_for(lambda: any("w200" in e.text for e in agent_messages(tmp_path)), "the answer streams")
        kill(first)
        [cut] = agent_messages(tmp_path)
        assert "⏱" not in cut.text
        restart_until(tmp_path, port, started, "⏱")
    [answer] = agent_messages(tmp_path)
    assert answer.id == cut.id and answer.text.count("w0 ") == 1 and "the end" in answer.text


def prompted(tmp: Path) -> bool:
    record = tmp / "record.jsonl"
    return record.exists() and '"session/prompt"' in record.read_text()


def test_a_relay_killed_between_the_transcript_and_the_store_finishes_the_answer_in_that_message(
        tmp_path: Path) -> None:
    """The kill window: the transcript has the answer's first message, the store does not yet say it is
    the answer's (its write waits on the store's file, held here). The restarted relay takes that
    message up instead of posting the answer again below it."""
    port = free_port()
    with relays() as started:
        started.append(first := start(tmp_path, port))
        post(port, "sleep 3\n" + LONG, "m1")
        wait_for(lambda: prompted(tmp_path), "the agent is asked")
        held = sqlite3.connect(tmp_path / "relay.db", isolation_level=None)
        try:
            held.execute("BEGIN IMMEDIATE")  # the relay's next store write waits: the answer's record
            wait_for(lambda: agent_messages(tmp_path), "the answer's first message is in the transcript")
            kill(first)
        finally:
            held.close()
        [cut] = agent_messages(tmp_path)
        with Store.open(tmp_path / "relay.db") as store:
            [unfinished] = store.unfinished_inbound()
            assert store.reply_messages(unfinished.surface, unfinished.message_id) == [], \
                "the store noted the message before it was held (the test took over 3 s to hold it)"
        restart_until(tmp_path, port, started, "the end")
    shown = agent_messages(tmp_path)
    assert [e.id for e in shown] == [cut.id], [e.text[:40] for e in shown]  # not posted again below it
    assert shown[0].text.count("w0 ") == 1 and "the end" in shown[0].text
