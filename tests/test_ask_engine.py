"""``acp-relay ask`` runs through the relay's own Engine and turn (real subprocesses): the terminal is
one more surface, so ``ask`` has the chat's ladder (a session the agent lost is tried once more, on
a new one, with the chat's notice), keeps its prompt verbatim (never read as a command or an answer
to a question), and leaves no store behind (it is in memory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.engine import wording
from tests.test_cli import env, fake_config, methods, no_traceback, run, write_config

__all__ = ["env"]  # the fixture, imported for pytest

LOST = json.dumps({"message": "Resource not found", "data": {"uri": "s1"}})


@pytest.mark.parametrize("prompt", ["deny", "approve 1", "/stop", "/new"])
def test_a_prompt_that_reads_like_a_command_is_still_the_prompt(tmp_path: Path, env: dict[str, str],
                                                                 prompt: str) -> None:
    proc = run(env, "ask", "--config", str(write_config(tmp_path, fake_config(tmp_path))), prompt)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"echo: {prompt}"), proc.stderr
    no_traceback(proc)


def test_a_session_the_agent_lost_is_tried_once_more_on_a_new_one(tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "ask", "--config", str(write_config(tmp_path, fake_config(tmp_path))),
               f"fail_times lost 1 -32002 {LOST}\ntext answered on a new session")
    assert (proc.returncode, proc.stdout.strip()) == (0, "answered on a new session"), proc.stderr
    assert wording.SESSION_LOST in proc.stderr, "said as in a chat"
    assert methods(tmp_path / "record.jsonl").count("session/new") == 2
    no_traceback(proc)


def test_a_session_lost_twice_is_the_failure(tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "ask", "--config", str(write_config(tmp_path, fake_config(tmp_path))),
               f"fail_times lost 2 -32002 {LOST}\ntext never")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.strip().splitlines()[-1].startswith("The agent no longer has this conversation")
    assert methods(tmp_path / "record.jsonl").count("session/prompt") == 2, "once more, not a loop"
    no_traceback(proc)


def test_ask_keeps_no_store(tmp_path: Path, env: dict[str, str]) -> None:
    data = fake_config(tmp_path)
    proc = run(env, "ask", "--config", str(write_config(tmp_path, data)), "text hi")
    assert proc.returncode == 0, proc.stderr
    assert not Path(data["store"]["path"]).exists(), "the conversation lived in memory"
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").rglob("*.db"))
