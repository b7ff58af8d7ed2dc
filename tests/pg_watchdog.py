"""Stops a throwaway PostgreSQL cluster once the process that started it is gone.

The fixtures stop their cluster on a normal exit; a test run killed (SIGTERM from a timeout, kill -9)
runs no teardown, and its server would go on listening. ``PostgresServer.start`` runs this script
beside each cluster, in a session of its own (a signal to the test run's process group does not
reach it): it waits for the owner to exit, then stops the cluster at once and removes its folder. It
exits by itself when the folder is gone (the cluster was stopped normally).

    python tests/pg_watchdog.py OWNER_PID PG_BIN_DIR CLUSTER_ROOT
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(owner: int, bin_dir: Path, root: Path) -> None:
    while _alive(owner) and root.exists():
        time.sleep(0.5)
    if not root.exists():
        return  # stopped by its owner
    if (root / "data" / "postmaster.pid").exists():
        _stop(bin_dir, root)
    shutil.rmtree(root, ignore_errors=True)


def _stop(bin_dir: Path, root: Path) -> None:
    command = [str(bin_dir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    subprocess.run(command, capture_output=True, timeout=60, check=False)


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
