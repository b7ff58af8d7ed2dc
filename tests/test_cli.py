"""The installed ``acp-relay`` console script, run as a real subprocess (the CLI contract).

Each test runs with HOME and XDG_STATE_HOME in ``tmp_path`` (no real config, log or store is
touched) and a PATH on which no real agent (kiro-cli, claude-agent-acp, codex-acp) is found.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
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
            "retry": {"attempts": 2, "budget_s": 10, "base_delay_s": 0.05}}


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


def test_ask_never_prints_a_secret_of_the_relays_environment_the_agent_read(
        tmp_path: Path, env: dict[str, str]) -> None:
    webhook = "wHk_9fQ2-xLr7TzP4mVb8NcY3sKd"  # no format rule knows its shape
    config = write_config(tmp_path, fake_config(tmp_path))
    prompt = "error -32603 the webhook secret {parent_env:TELEGRAM_WEBHOOK_SECRET} was refused"
    proc = run({**env, "TELEGRAM_WEBHOOK_SECRET": webhook}, "ask", "--config", str(config), prompt)
    assert proc.returncode == 1
    assert "the webhook secret [redacted] was refused" in proc.stderr  # read from /proc/<relay pid>/environ
    assert webhook[:5] not in proc.stderr
    no_traceback(proc)


def test_ask_shows_an_error_the_agent_also_streamed_as_text_once(tmp_path: Path, env: dict[str, str]) -> None:
    # claude-agent-acp 0.23: the model API's 401 streams as a chunk, then comes the JSON-RPC error.
    echo = "Invalid API key · Please run the login command"
    error = json.dumps({"message": f"Internal error: {echo}", "data": None})
    config = write_config(tmp_path, fake_config(tmp_path))
    proc = run(env, "ask", "--config", str(config), f"text {echo}\nerror_data -32603 {error}")
    assert proc.returncode == 1
    assert proc.stdout.strip() == "", "the echo is not printed as if it were the answer"
    assert proc.stderr.strip(), "the person reads the error once, on stderr"
    no_traceback(proc)


def test_ask_prints_one_chunk_and_many_chunk_answers_alike(tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, fake_config(tmp_path))
    one = run(env, "ask", "--config", str(config), "text just this")
    many = run(env, "ask", "--config", str(config), "chunks 5")
    assert (one.returncode, one.stdout.strip()) == (0, "just this")
    assert (many.returncode, many.stdout.split()) == (0, ["w0", "w1", "w2", "w3", "w4"])


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


def test_check_config_rejects_json_nested_too_deeply_with_exit_2(tmp_path: Path, env: dict[str, str]) -> None:
    deep = write_config(tmp_path, "[" * 200_000 + "]" * 200_000, name="deep.json")
    proc = run(env, "check-config", "--config", str(deep))
    assert proc.returncode == 2
    assert "not valid JSON: nested too deeply" in proc.stderr
    assert "went wrong" not in proc.stderr
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

    # With the token there, doctor asks Telegram (getMe): here nothing answers at the Bot API address.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        data["surfaces"]["telegram"]["api_base_url"] = f"http://127.0.0.1:{closed.getsockname()[1]}"
    proc = run({**env, "ACP_TEST_TG_TOKEN": "123:abc"}, "doctor", "--config", str(write_config(tmp_path, data)))
    assert proc.returncode == 1
    assert "surface telegram: $ACP_TEST_TG_TOKEN present; Telegram did not answer getMe" in proc.stdout
    assert "123:abc" not in proc.stdout
    no_traceback(proc)


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


NO_PTB = "raise ModuleNotFoundError(\"No module named 'telegram'\", name='telegram')\n"
MISSING_EXTRA = "the telegram surface needs telegram, which is not installed: pip install 'acp-relay[telegram]'"


def without_telegram(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` on which ``import telegram`` fails as it does where the extra is not installed."""
    shim = tmp_path / "no-ptb" / "telegram"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(NO_PTB, encoding="utf-8")
    return {**env, "PYTHONPATH": os.pathsep.join([str(shim.parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def test_run_refuses_to_start_a_surface_this_version_does_not_have(tmp_path: Path, env: dict[str, str]) -> None:
    config = fake_config(tmp_path)
    config["surfaces"] = {"dashboard": {"enabled": False}, "telegram": {"enabled": True}}
    proc = run(without_telegram(tmp_path, env), "run", "--config", str(write_config(tmp_path, config)))
    assert proc.returncode == 2
    assert f"acp-relay: telegram: {MISSING_EXTRA}\n" in proc.stderr
    no_traceback(proc)
    assert not methods(tmp_path / "record.jsonl"), "no agent was started"


def test_run_refuses_a_dashboard_off_loopback_without_an_access_token(tmp_path: Path, env: dict[str, str]) -> None:
    config = fake_config(tmp_path)
    config["surfaces"] = {"dashboard": {"enabled": True, "host": "0.0.0.0", "port": 0}}
    proc = run(env, "run", "--config", str(write_config(tmp_path, config)))
    assert proc.returncode == 2
    assert "ACP_RELAY_DASHBOARD_TOKEN" in proc.stderr  # says which variable would allow it
    no_traceback(proc)
    assert not methods(tmp_path / "record.jsonl"), "no agent was started"


# -- audit fixes: terminal approval, refusal card, check-config ----------------------------------


def _pty_ask(env: dict[str, str], config: Path, prompt: str) -> tuple[subprocess.Popen[bytes], int]:
    """`ask` with a real terminal on stdin (the approval question is only asked on a tty)."""
    import pty

    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen([CLI, "ask", "--config", str(config), prompt], env=env, stdin=child_fd,
                            stdout=child_fd, stderr=child_fd, start_new_session=True)
    os.close(child_fd)
    return proc, main_fd


def _read_until(fd: int, needle: bytes, proc: subprocess.Popen[bytes]) -> bytes:
    import select

    seen = b""
    deadline = time.monotonic() + HANG_GUARD_S
    while needle not in seen:
        assert time.monotonic() < deadline and proc.poll() is None, seen.decode(errors="replace")
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


def _finish(proc: subprocess.Popen[bytes], fd: int, within_s: float) -> int | None:
    """The exit code within ``within_s`` seconds, else None (then the process is killed)."""
    try:
        return proc.wait(timeout=within_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
    finally:
        os.close(fd)


APPROVAL_SCRIPT = "tool t1 execute ls\npermission t1\ntext after"


def test_ctrl_c_while_the_approval_question_waits_exits_130_without_enter(
        tmp_path: Path, env: dict[str, str]) -> None:
    config = write_config(tmp_path, fake_config(tmp_path))
    proc, fd = _pty_ask(env, config, APPROVAL_SCRIPT)
    _read_until(fd, b"[y/a/N]", proc)
    proc.send_signal(signal.SIGINT)
    assert _finish(proc, fd, 10.0) == 130, "still waiting for Enter after Ctrl-C"
    assert "session/cancel" in methods(tmp_path / "record.jsonl")


def test_unanswered_approval_question_times_out_as_denied_without_enter(
        tmp_path: Path, env: dict[str, str]) -> None:
    data = fake_config(tmp_path)
    data["timeouts"] = {"approval_s": 0.5}
    proc, fd = _pty_ask(env, write_config(tmp_path, data), APPROVAL_SCRIPT)
    seen = _read_until(fd, b"after", proc)  # denied on the timeout, the turn goes on
    assert b"permission:selected:reject" in seen
    assert _finish(proc, fd, 10.0) == 0, "the finished run waited for Enter"


def test_an_answer_typed_at_the_approval_question_is_used(tmp_path: Path, env: dict[str, str]) -> None:
    proc, fd = _pty_ask(env, write_config(tmp_path, fake_config(tmp_path)), APPROVAL_SCRIPT)
    _read_until(fd, b"[y/a/N]", proc)
    os.write(fd, b"y\n")
    seen = _read_until(fd, b"after", proc)
    assert b"permission:selected:allow-once" in seen
    assert _finish(proc, fd, 10.0) == 0


def test_allow_for_this_session_at_the_terminal_covers_that_command_only(tmp_path: Path, env: dict[str, str]) -> None:
    script = ("tool t1 execute ls\npermission t1\ntool t2 execute ls\npermission t2\n"
              "tool t3 execute rm -rf x\npermission t3\ntext after")
    proc, fd = _pty_ask(env, write_config(tmp_path, fake_config(tmp_path)), script)
    try:
        seen = _read_until(fd, b"[y/a/N]", proc)
        assert b"allow `ls` for this session" in seen
        os.write(fd, b"a\n")
        seen += _read_until(fd, b"`rm -rf x` for this session) [y/a/N]", proc)  # another command is asked about
        os.write(fd, b"n\n")
        seen += _read_until(fd, b"after", proc)
    finally:
        code = _finish(proc, fd, 10.0)  # never left behind, also when a read above failed
    assert code == 0
    assert seen.count(b"[y/a/N]") == 2, "the second ls was not asked about"
    # The relay keeps the session's allow itself: the agent is answered "once" each time.
    assert seen.count(b"permission:selected:allow-once") == 2
    assert seen.count(b"permission:selected:reject") == 1


KIRO_EXPLANATION = "The selected model cannot continue this conversation because of its content policy."


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "not-streamed"])
def test_ask_shows_a_kiro_refusal_explanation_once(tmp_path: Path, env: dict[str, str], streamed: bool) -> None:
    data = fake_config(tmp_path, "--kiro")
    data["agents"]["fake"]["backend"] = "kiro"
    meta = json.dumps({"stopReason": "CONTENT_FILTERED",
                       "refusal": {"category": "harmful", "explanation": KIRO_EXPLANATION}})
    script = (f"text {KIRO_EXPLANATION}\n" if streamed else "") + f"kiro_meta {meta}"
    proc = run(env, "ask", "--config", str(write_config(tmp_path, data)), script)
    assert proc.returncode == 1
    assert (proc.stdout + proc.stderr).count(KIRO_EXPLANATION) == 1, proc.stdout + proc.stderr
    assert "The model declined" in proc.stderr and "Category: harmful" in proc.stderr
    assert ("Why:" in proc.stderr) is not streamed


def test_check_config_redacts_secrets_anywhere_in_the_dump(tmp_path: Path, env: dict[str, str]) -> None:
    leaks = ["sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
             "hunter2", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]
    data = {"agents": {"k": {"command": "kiro-cli", "args": ["acp", "--api-key", leaks[0]],
                             "env": {"ANTHROPIC_BASE_URL": f"https://user:{leaks[2]}@proxy.example",
                                     "GH": leaks[1]}}},
            "surfaces": {"telegram": {"api_base_url": f"http://127.0.0.1:8081/bot123456789:{leaks[3]}"}}}
    proc = run(env, "check-config", "--config", str(write_config(tmp_path, data)))
    assert proc.returncode == 0, proc.stderr
    for leak in leaks:
        assert leak not in proc.stdout and leak not in proc.stderr
    assert json.loads(proc.stdout)["agents"]["k"]["env"]["GH"] == "ghp_[redacted]"


def test_check_config_reports_an_enabled_surface_this_version_does_not_have(
        tmp_path: Path, env: dict[str, str]) -> None:
    data = fake_config(tmp_path)
    data["surfaces"] = {"telegram": {"enabled": True}, "slack": {"enabled": False}}
    proc = run(without_telegram(tmp_path, env), "check-config", "--config", str(write_config(tmp_path, data)))
    assert proc.returncode == 2
    assert f"surfaces.telegram.enabled: {MISSING_EXTRA}" in proc.stderr  # the sentence run says
    assert "slack" not in proc.stderr and "dashboard" not in proc.stderr
    assert proc.stdout == ""
    no_traceback(proc)


def test_check_config_with_an_unknown_default_agent_and_no_agents_exits_2(
        tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "check-config", "--config", str(write_config(tmp_path, {"default_agent": "nope"})))
    assert proc.returncode == 2
    assert "default_agent" in proc.stderr and "kiro" in proc.stderr
    no_traceback(proc)


def test_check_config_refuses_what_run_would_refuse_a_dashboard_off_loopback_without_a_token(
        tmp_path: Path, env: dict[str, str]) -> None:
    config = fake_config(tmp_path)
    config["surfaces"] = {"dashboard": {"enabled": True, "host": "0.0.0.0"}}
    proc = run(env, "check-config", "--config", str(write_config(tmp_path, config)))
    assert proc.returncode == 2
    assert "surfaces.dashboard.host" in proc.stderr and "ACP_RELAY_DASHBOARD_TOKEN" in proc.stderr
    no_traceback(proc)
    strong = run({**env, "ACP_RELAY_DASHBOARD_TOKEN": "x" * 32}, "check-config", "--config",
                 str(write_config(tmp_path, config)))
    assert strong.returncode == 0, strong.stderr
    assert "x" * 32 not in strong.stdout  # the token itself is never printed
