"""``acp-relay run`` with the dashboard, as a real process: start-up problems are one sentence and
exit 2, never a traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from .conftest import DEMO_CODE, ROOT

HANG_GUARD_S = 60.0


def acp_relay(tmp_path: Path, config: dict[str, object], **env: str) -> subprocess.CompletedProcess[str]:
    """``acp-relay run --config <config>`` in a clean environment; returns once it exits."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    script = Path(sys.executable).with_name("acp-relay")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "core.cli"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACP_RELAY_")}
    clean.update(HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(ROOT), **env)
    return subprocess.run([*command, "run", "--config", str(path)], cwd=tmp_path, env=clean, capture_output=True,
                          text=True, timeout=HANG_GUARD_S, check=False)


def relay_config(tmp_path: Path, **dashboard: object) -> dict[str, object]:
    (tmp_path / "work").mkdir(exist_ok=True)
    return {"agents": {"demo": {"command": sys.executable, "args": ["-c", DEMO_CODE], "cwd": str(tmp_path / "work"),
                                "env": {"PYTHONPATH": str(ROOT)}}},
            "store": {"path": str(tmp_path / "relay.db")},
            "surfaces": {"dashboard": {"host": "127.0.0.1", **dashboard}}}


def test_a_dashboard_port_in_use_exits_2_with_one_sentence(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = acp_relay(tmp_path, relay_config(tmp_path, port=port))
    assert done.returncode == 2, done.stderr
    assert (f"acp-relay: dashboard: 127.0.0.1:{port} is already in use (another acp-relay?); "
            "change surfaces.dashboard.port\n") in done.stderr
    assert "Traceback" not in done.stderr and "went wrong" not in done.stderr


def test_a_short_dashboard_token_exits_2_with_one_sentence(tmp_path: Path) -> None:
    done = acp_relay(tmp_path, relay_config(tmp_path, host="0.0.0.0", port=0), ACP_RELAY_DASHBOARD_TOKEN="1")
    assert done.returncode == 2, done.stderr
    assert "acp-relay: dashboard: refusing to start the dashboard: ACP_RELAY_DASHBOARD_TOKEN holds" in done.stderr
    assert "Traceback" not in done.stderr
