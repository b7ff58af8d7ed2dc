"""The installed ``acp-relay`` console script, run as a real subprocess (the CLI contract).

Each test runs with HOME and XDG_STATE_HOME in ``tmp_path`` (no real config, log or store is
touched) and a PATH on which no real agent (kiro-cli, claude-agent-acp, codex-acp) is found.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "tests" / "fakes" / "acp_agent.py"
CLI = shutil.which("acp-relay", path=str(Path(sys.executable).parent)) or str(
    Path(sys.executable).with_name("acp-relay"))
HANG_GUARD_S = 30.0
REAL_AGENTS = ("kiro-cli", "claude-agent-acp", "codex-acp")
SECRET = "sk-test-5ecret-value-do-not-print"
MALFORMED = json.dumps({"message": "Internal error",
                        "data": "Encountered an error in the response stream: Improperly formed request."})


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_", "XDG_"))}
    base.update(HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"),
                PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
                PYTHONUNBUFFERED="1")
    return base


def write_config(tmp_path: Path, data: dict[str, Any] | str, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def fake_config(tmp_path: Path, *flags: str) -> dict[str, Any]:
    args = [str(AGENT), "--record", str(tmp_path / "record.jsonl"), *flags]
    return {"agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(tmp_path),
                                "env": {"API_KEY": SECRET, "PLAIN_SETTING": "visible"}}},
            "store": {"path": str(tmp_path / "relay.db")},
            "retry": {"attempts": 2, "budget_s": 0.1, "base_delay_s": 0.05}}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S,
                          check=False)


def methods(record: Path) -> list[str]:
    if not record.exists():
        return []
    frames = [json.loads(x) for x in record.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [f["method"] for f in frames if "method" in f]


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


# -- ask -----------------------------------------------------------------------------------------


def test_ask_streams_the_answer_to_stdout_and_exits_0(tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, fake_config(tmp_path))
    proc = run(env, "ask", "--config", str(config), "text the answer is 42")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "the answer is 42"
    no_traceback(proc)


def test_ask_on_an_agent_error_prints_the_friendly_message_and_exits_1(
        tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, fake_config(tmp_path))
    proc = run(env, "ask", "--config", str(config), f"error_data -32603 {MALFORMED}")
    assert proc.returncode == 1
    assert "malformed" in proc.stderr
    assert "Improperly formed request" not in proc.stderr, "no raw provider text"
    assert "-32603" not in proc.stderr
    no_traceback(proc)
    assert methods(tmp_path / "record.jsonl").count("session/prompt") == 1, "terminal: never retried"


def test_ask_on_timeout_prints_the_partial_output_then_the_message(tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, fake_config(tmp_path))
    proc = run(env, "ask", "--config", str(config), "--timeout", "1", "text partial\nhang")
    assert proc.returncode == 1
    assert proc.stdout.strip() == "partial"
    assert "timed out" in proc.stderr
    no_traceback(proc)
    assert "session/cancel" in methods(tmp_path / "record.jsonl"), "the agent's turn was ended too"


def test_ask_with_a_missing_agent_binary_names_the_command_and_its_config_key(
        tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, {"agents": {"ghost": {"command": "no-such-agent-xyz"}}})
    proc = run(env, "ask", "--config", str(config), "--agent", "ghost", "hello")
    assert proc.returncode == 1
    assert "no-such-agent-xyz" in proc.stderr and "agents.ghost.command" in proc.stderr
    no_traceback(proc)


def test_ask_with_the_only_configured_agent_missing_does_not_silently_use_another(
        tmp_path: Path, env: dict[str, str]) -> None:
    """The operator configured one agent and no --agent was given: its binary being absent is an
    error to report, not a reason to answer with the built-in demo agent instead."""
    config = write_config(tmp_path, {"agents": {"ghost": {"command": "no-such-agent-xyz"}}})
    proc = run(env, "ask", "--config", str(config), "hello")
    assert proc.returncode == 1, (
        "core.agents.choose_agent falls back to the built-in demo agent when no configured agent is "
        f"on PATH, so `ask` answered with exit {proc.returncode}: {proc.stdout[:80]!r}")
    assert "no-such-agent-xyz" in proc.stderr and "agents.ghost.command" in proc.stderr
    no_traceback(proc)


def test_ctrl_c_during_ask_cancels_the_agents_turn_and_exits_130(tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, fake_config(tmp_path))
    record = tmp_path / "record.jsonl"
    proc = subprocess.Popen([CLI, "ask", "--config", str(config), "text working\nhang"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        while "session/prompt" not in methods(record):
            assert time.monotonic() < deadline and proc.poll() is None, "the prompt never reached the agent"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "session/cancel" in methods(record)
    assert "working" in out
    assert "Traceback" not in err


def test_ask_with_unparseable_config_warns_and_runs_on_defaults(tmp_path: Path, env: dict[str, str]) -> None:
    real = [a for a in REAL_AGENTS if shutil.which(a, path=env["PATH"])]
    if real:
        pytest.skip(f"the defaults would start a real agent: {real}")
    config = write_config(tmp_path, "{ this is not json", name="broken.json")
    proc = run(env, "ask", "--config", str(config), "hello")
    assert proc.returncode == 0, proc.stderr
    assert "not valid JSON" in proc.stderr and "defaults" in proc.stderr
    assert "demo agent" in proc.stdout, "with no agent configured and none on PATH, the demo agent answers"
    no_traceback(proc)


# -- check-config --------------------------------------------------------------------------------


def test_check_config_prints_the_effective_config_with_secrets_masked(tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, fake_config(tmp_path))
    proc = run(env, "check-config", "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["agents"]["fake"]["command"] == sys.executable
    assert data["agents"]["fake"]["env"] == {"API_KEY": "****", "PLAIN_SETTING": "visible"}
    assert SECRET not in proc.stdout and SECRET not in proc.stderr


def test_check_config_names_each_bad_key_by_its_json_path_and_exits_2(tmp_path: Path, env: dict[str, str]) -> None:
    bad = {"agents": {"x": {"command": "a", "bogus": 1}}, "timeouts": {"prompt_s": "9"},
           "surfaces": {"telegram": {"allowed_user_ids": ["not-a-number"]}}}
    proc = run(env, "check-config", "--config", str(write_config(tmp_path, bad)))
    assert proc.returncode == 2
    for path in ("agents.x.bogus", "timeouts.prompt_s", "surfaces.telegram.allowed_user_ids[0]"):
        assert path in proc.stderr
    assert proc.stdout == ""
    no_traceback(proc)


def test_check_config_rejects_unparseable_json_with_exit_2(tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "check-config", "--config", str(write_config(tmp_path, "{nope", name="broken.json")))
    assert proc.returncode == 2
    assert "not valid JSON" in proc.stderr
    no_traceback(proc)


def test_a_config_with_wrong_keys_stops_ask_with_exit_2(tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "ask", "--config", str(write_config(tmp_path, {"agentz": {}})), "hello")
    assert proc.returncode == 2
    assert "agentz" in proc.stderr
    no_traceback(proc)


# -- doctor --------------------------------------------------------------------------------------


def test_doctor_reports_agent_binary_and_store_and_exits_0_when_all_is_well(
        tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, fake_config(tmp_path))
    proc = run(env, "doctor", "--config", str(config))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"agent fake: {sys.executable} -> " in proc.stdout
    assert f"store: {tmp_path / 'relay.db'} writable" in proc.stdout


def test_doctor_reports_a_missing_token_and_exits_1(tmp_path: Path, env: dict[str, str]) -> None:
    data = fake_config(tmp_path)
    data["surfaces"] = {"telegram": {"enabled": True, "token_env": "ACP_TEST_TG_TOKEN"}}
    proc = run(env, "doctor", "--config", str(write_config(tmp_path, data)))
    assert proc.returncode == 1
    assert "surface telegram: $ACP_TEST_TG_TOKEN MISSING" in proc.stdout

    proc = run({**env, "ACP_TEST_TG_TOKEN": "123:abc"}, "doctor", "--config", str(write_config(tmp_path, data)))
    assert proc.returncode == 0
    assert "surface telegram: $ACP_TEST_TG_TOKEN present" in proc.stdout
    assert "123:abc" not in proc.stdout


def test_doctor_reports_an_unwritable_store_and_exits_1(tmp_path: Path, env: dict[str, str]) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x", encoding="utf-8")
    data = fake_config(tmp_path)
    data["store"] = {"path": str(blocker / "relay.db")}
    proc = run(env, "doctor", "--config", str(write_config(tmp_path, data)))
    assert proc.returncode == 1
    assert "store:" in proc.stdout and "writable" not in proc.stdout
    no_traceback(proc)


def test_doctor_reports_a_missing_agent_binary_and_exits_1(tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, {"agents": {"ghost": {"command": "no-such-agent-xyz"}},
                                     "store": {"path": str(tmp_path / "relay.db")}})
    proc = run(env, "doctor", "--config", str(config))
    assert "agent ghost: no-such-agent-xyz -> NOT FOUND on PATH" in proc.stdout
    assert proc.returncode == 1, "core.cli._doctor prints NOT FOUND for an agent binary but does not count it"


def test_run_refuses_to_start_a_surface_this_version_does_not_have(tmp_path: Path, env: dict[str, str]) -> None:
    config = fake_config(tmp_path)
    config["surfaces"] = {"dashboard": {"enabled": False}, "telegram": {"enabled": True}}
    proc = run(env, "run", "--config", str(write_config(tmp_path, config)))
    assert proc.returncode == 2
    assert "surfaces.telegram is enabled, but this version has no telegram surface yet" in proc.stderr
    no_traceback(proc)


def test_run_refuses_a_dashboard_off_loopback_without_an_access_token(tmp_path: Path, env: dict[str, str]) -> None:
    config = fake_config(tmp_path)
    config["surfaces"] = {"dashboard": {"enabled": True, "host": "0.0.0.0", "port": 0}}
    proc = run(env, "run", "--config", str(write_config(tmp_path, config)))
    assert proc.returncode == 2
    assert "ACP_RELAY_DASHBOARD_TOKEN" in proc.stderr  # says which variable would allow it
    no_traceback(proc)
    assert not methods(tmp_path / "record.jsonl"), "no agent was started"
