"""The store as the ``acp-relay`` command meets it: check-config, run and doctor with a PostgreSQL
URL in an environment variable (unset, unreadable, refused, unreachable, working), and an unusable
SQLite file. Each runs the installed console script as a real subprocess."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.postgres import PASSWORD, PostgresServer
from tests.test_cli import CLI, HANG_GUARD_S, env, fake_config, no_traceback, run, write_config

__all__ = ["env"]  # the fixture, imported for these tests

VAR = "ACP_TEST_DATABASE_URL"


def pg_config(tmp_path: Path) -> Path:
    data = fake_config(tmp_path)
    data["store"] = {"path": str(tmp_path / "relay.db"), "url_env": VAR}
    data["surfaces"] = {"dashboard": {"enabled": True, "port": _free_port()}}
    return write_config(tmp_path, data)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_check_config_says_the_database_variable_is_unset(tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "check-config", "--config", str(pg_config(tmp_path)))
    assert proc.returncode == 2
    assert f"store.url_env: store.url_env names {VAR}, which is not set" in proc.stderr
    no_traceback(proc)


def test_check_config_refuses_an_unreadable_url_without_quoting_it(tmp_path: Path, env: dict[str, str]) -> None:
    url = "postgresq://relay:hunter2-pw@db.example/relay"  # a typo in the scheme: libpq reads it as key=value
    proc = run({**env, VAR: url}, "check-config", "--config", str(pg_config(tmp_path)))
    assert proc.returncode == 2
    assert f"{VAR} does not hold a PostgreSQL connection string libpq can read" in proc.stderr
    assert "hunter2" not in proc.stderr + proc.stdout
    no_traceback(proc)


def test_check_config_masks_nothing_it_does_not_print(tmp_path: Path, env: dict[str, str]) -> None:
    url = "postgresql://relay:hunter2-pw@db.example:5432/relay"
    proc = run({**env, VAR: url}, "check-config", "--config", str(pg_config(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    assert f'"url_env": "{VAR}"' in proc.stdout  # the variable's name, never its value
    assert "hunter2" not in proc.stdout and "db.example" not in proc.stdout


def test_run_exits_2_when_the_database_refuses_the_password(
        tmp_path: Path, env: dict[str, str], postgres: PostgresServer) -> None:
    url = postgres.url(password="wrong-pw-xyz")
    proc = run({**env, VAR: url}, "run", "--config", str(pg_config(tmp_path)))
    assert proc.returncode == 2
    assert "the server refused the user name or password; check them in " + VAR in proc.stderr
    assert "wrong-pw-xyz" not in proc.stderr + proc.stdout
    no_traceback(proc)


def test_run_exits_2_when_the_variable_is_unset_and_when_the_sqlite_file_cannot_be(
        tmp_path: Path, env: dict[str, str]) -> None:
    proc = run(env, "run", "--config", str(pg_config(tmp_path)))
    assert proc.returncode == 2
    assert f"names {VAR}, which is not set" in proc.stderr
    (tmp_path / "blocker").write_text("x")
    data = fake_config(tmp_path)
    data["store"] = {"path": str(tmp_path / "blocker" / "relay.db")}
    proc = run(env, "run", "--config", str(write_config(tmp_path, data)))
    assert proc.returncode == 2
    assert "check the path and its permissions" in proc.stderr
    no_traceback(proc)


def test_run_tries_an_unreachable_database_again_until_stopped(tmp_path: Path, env: dict[str, str]) -> None:
    url = f"postgresql://relay:pw@127.0.0.1:{_free_port()}/relay"  # nothing listens there
    proc = subprocess.Popen([CLI, "run", "--config", str(pg_config(tmp_path))], env={**env, VAR: url},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline(), proc.stderr.readline()]  # two tries, a second apart
        proc.terminate()
        _, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "cannot reach the database server (connection refused)" in lines[0]
    assert lines[0].rstrip().endswith("trying again in 1 s") and lines[1].rstrip().endswith("trying again in 2 s")
    assert "stopped before the store could be opened" in err
    assert proc.returncode == 0
    assert "Traceback" not in err


def test_run_on_postgresql_starts_creates_the_schema_and_stops_cleanly(
        tmp_path: Path, env: dict[str, str], postgres: PostgresServer) -> None:
    url = postgres.schema_url("run")
    proc = subprocess.Popen([CLI, "run", "--config", str(pg_config(tmp_path))], env={**env, VAR: url},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        schema = url.rsplit("%3D", 1)[1]
        while postgres.psql(f"SELECT count(*) FROM pg_tables WHERE schemaname = '{schema}'").strip() != "7":
            assert time.monotonic() < deadline and proc.poll() is None, "the relay never created its tables"
            time.sleep(0.1)
        proc.terminate()
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "stopped cleanly" in err
    assert PASSWORD not in out + err
    assert not (tmp_path / "relay.db").exists()  # the state is in the database


def test_doctor_checks_the_database_its_schema_and_the_clock(
        tmp_path: Path, env: dict[str, str], postgres: PostgresServer) -> None:
    proc = run({**env, VAR: postgres.schema_url("doctor")}, "doctor", "--config", str(pg_config(tmp_path)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("store: ")]
    assert lines[0].startswith(f"store: postgresql://postgres@127.0.0.1:{postgres.port}/postgres reachable and "
                               "writable (PostgreSQL, schema version ")
    assert lines[1].startswith("store: clock skew ") and "against the database server (round trip" in lines[1]
    assert PASSWORD not in proc.stdout


@pytest.mark.parametrize("url", ["unset", "postgresql://relay:pw@127.0.0.1:{port}/relay"])
def test_doctor_reports_a_database_it_cannot_use_and_exits_1(tmp_path: Path, env: dict[str, str], url: str) -> None:
    environ = env if url == "unset" else {**env, VAR: url.format(port=_free_port())}
    proc = run(environ, "doctor", "--config", str(pg_config(tmp_path)))
    assert proc.returncode == 1
    expected = f"names {VAR}, which is not set" if url == "unset" else "cannot reach the database server"
    assert expected in proc.stdout
    no_traceback(proc)
