"""``acp-relay ask`` on turns real agents do not report as errors (run as a real subprocess).

An empty turn is never a silent success; codex-acp 2.x's failed turn (systemError, the provider's
text, end_turn) is a failure whose raw text is never printed as the answer.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from core.engine import wording
from tests.test_cli import fake_config, methods, no_traceback, run, write_config

THROTTLED = json.dumps({"message": "Internal error",
                        "data": "Encountered an error in the response stream: ThrottlingException"})
CODEX_429 = "exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock"
CODEX_400 = json.dumps({"error": {"type": "invalid_request_error", "message": "Improperly formed request."}})


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """As in test_cli: HOME and state in tmp_path, no real agent on PATH."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_", "XDG_"))}
    base.update(HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"),
                PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
                PYTHONUNBUFFERED="1")
    return base


def _ask(tmp_path: Path, env: dict[str, str], script: str):
    proc = run(env, "ask", "--config", str(write_config(tmp_path, fake_config(tmp_path))), script)
    no_traceback(proc)
    return proc, methods(tmp_path / "record.jsonl").count("session/prompt")


def test_an_empty_first_answer_is_said_on_stderr_and_exits_1(tmp_path: Path, env: dict[str, str]) -> None:
    proc, prompts = _ask(tmp_path, env, "stop end_turn")
    assert (proc.returncode, proc.stdout, prompts) == (1, "", 1)
    assert proc.stderr.strip() == wording.EMPTY_ANSWER


def test_an_empty_answer_to_a_retry_is_the_failure_again(tmp_path: Path, env: dict[str, str]) -> None:
    proc, prompts = _ask(tmp_path, env, f"fail_times t 1 -32603 {THROTTLED}\nstop end_turn")
    assert proc.returncode == 1
    assert prompts == 2, "the config's ladder has two attempts; the empty retry used the second"
    assert proc.stderr.strip().splitlines()[-1].startswith("The model provider is rate-limiting")
    assert wording.EMPTY_ANSWER not in proc.stderr


def test_a_codex_system_error_is_retried_and_its_text_never_printed(tmp_path: Path, env: dict[str, str]) -> None:
    proc, prompts = _ask(tmp_path, env, f"system_error_times k 1 {CODEX_429}\ntext the answer")
    assert (proc.returncode, proc.stdout.strip(), prompts) == (0, "the answer", 2)
    assert "exceeded retry limit" not in proc.stdout + proc.stderr
    assert "rate-limiting" in proc.stderr, "the retry was announced"


@pytest.mark.parametrize(("said", "prose"), [(CODEX_400, "malformed"), (CODEX_429, "rate-limiting")])
def test_a_codex_system_error_is_a_failure_with_prose(tmp_path: Path, env: dict[str, str], said: str,
                                                      prose: str) -> None:
    proc, _ = _ask(tmp_path, env, f"system_error_times k 9 {said}")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert prose in proc.stderr.strip().splitlines()[-1]
    assert "invalid_request_error" not in proc.stderr and "exceeded retry limit" not in proc.stderr
