"""``acp-relay ask`` (the installed console script, a real subprocess) against the real agents, as a
new user runs it: a failed model call is never printed as the answer, and never exits 0."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.peers.harness import PEER_TEST_TIMEOUT_S, Peer

pytestmark = pytest.mark.peer

CLI = shutil.which("acp-relay", path=str(Path(sys.executable).parent)) or str(
    Path(sys.executable).with_name("acp-relay"))
ATTEMPTS = 2
RAW = ("invalid_request_error", "rate_limit_", "Too Many Requests", "exceeded retry limit", "API Error", "{")


async def _ask(peer: Peer, tmp_path: Path, scenario: str) -> tuple[int, str, str]:
    peer.mock.scenario = scenario
    spec = peer.spec
    config = {"agents": {"peer": {"command": spec.command, "args": list(spec.args), "env": dict(spec.env),
                                  "cwd": spec.cwd}},
              "store": {"path": str(tmp_path / "relay.db")},
              "retry": {"attempts": ATTEMPTS, "budget_s": 60.0, "base_delay_s": 0.05}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_", "XDG_"))}
    env.update(HOME=str(peer.home), XDG_STATE_HOME=str(tmp_path / "state"), PYTHONUNBUFFERED="1")
    proc = await asyncio.create_subprocess_exec(CLI, "ask", "--config", str(path), "say hi", env=env,
                                                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), PEER_TEST_TIMEOUT_S)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_ask_retries_a_429_then_explains_it_and_exits_1(peer: Peer, tmp_path: Path) -> None:
    code, out, err = await _ask(peer, tmp_path, "429")
    assert code == 1, (out, err)
    assert out == "", "nothing was answered"
    assert peer.prompts() == ATTEMPTS, err
    assert "rate-limiting" in err.strip().splitlines()[-1]
    assert not [w for w in RAW if w in out + err], err
    assert "Traceback" not in err


async def test_ask_on_a_400_prints_the_malformed_prose_and_exits_1(peer: Peer, tmp_path: Path) -> None:
    code, out, err = await _ask(peer, tmp_path, "400")
    assert (code, out, peer.prompts()) == (1, "", 1), err
    assert "malformed" in err and "/compact" in err
    assert not [w for w in RAW if w in out + err], err
