"""Regressions of the ``acp-relay`` console script, run as a real subprocess.

``acp-relay ask`` must never retry a prompt once a tool ran: the retry could run the tool again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import env, fake_config, methods, no_traceback, run, write_config

__all__ = ["env"]  # the fixture, imported for pytest

OVERLOADED = "error -32603 Internal error: overloaded (529)"  # transient: retried when nothing ran


def allow_config(tmp_path: Path) -> Path:
    data = fake_config(tmp_path)
    data["agents"]["fake"]["tool_gate"] = "allow"
    return write_config(tmp_path, data)


def test_ask_retries_a_transient_error_when_nothing_ran(tmp_path: Path, env: dict[str, str]) -> None:
    """The control: the same error with no tool before it is retried."""
    proc = run(env, "ask", "--config", str(allow_config(tmp_path)), OVERLOADED)
    assert proc.returncode == 1
    no_traceback(proc)
    assert methods(tmp_path / "record.jsonl").count("session/prompt") == 2


@pytest.mark.parametrize("tool", [
    "tool t1 execute touch x\ntool_update t1 completed",  # the tool ran
    "tool t1 execute touch x\ntool_update t1 in_progress",  # the tool is running
    "tool t1 execute touch x",  # announced under tool_gate "allow": it may already be running
], ids=["completed", "in_progress", "announced"])
def test_ask_never_retries_after_a_tool_ran(tmp_path: Path, env: dict[str, str], tool: str) -> None:
    proc = run(env, "ask", "--config", str(allow_config(tmp_path)), f"{tool}\n{OVERLOADED}")
    assert proc.returncode == 1
    no_traceback(proc)
    assert methods(tmp_path / "record.jsonl").count("session/prompt") == 1, "never retried past a tool"
