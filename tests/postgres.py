"""A throwaway PostgreSQL server for the tests and the benchmarks: Debian's ``postgresql`` package,
a cluster made by ``initdb`` under a temporary folder, listening on 127.0.0.1 on a free port (and on
a unix socket in that folder), removed when stopped.

``initdb`` refuses to run as root, and CI runs as root: then the server runs as the ``postgres``
user (the package creates it) and the folder is handed to it. Password authentication over TCP, so
a wrong password is refused as a real server refuses it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

__all__ = ["INSTALL_HINT", "PASSWORD", "PostgresServer", "server_binaries"]

PASSWORD = "relay-test-pw"
WATCHDOG = Path(__file__).with_name("pg_watchdog.py")
INSTALL_HINT = ("PostgreSQL is not installed (needs initdb and pg_ctl under /usr/lib/postgresql/<version>/bin): "
                "apt-get install postgresql  (.ci/run installs it)")
_counter = itertools.count(1)


def server_binaries() -> Path | None:
    """The newest installed server's bin folder (``ACP_RELAY_PG_BIN`` overrides), or None."""
    given = os.environ.get("ACP_RELAY_PG_BIN")
    found = [Path(given)] if given else sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                                               key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    usable = [path for path in found if (path / "initdb").is_file() and (path / "pg_ctl").is_file()]
    return usable[-1] if usable else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """One running cluster; ``url()`` connects to it, ``schema_url()`` to a fresh schema of its own."""

    def __init__(self, bin_dir: Path, root: Path, port: int, *, durable: bool = False) -> None:
        self.bin_dir = bin_dir
        self.root = root
        self.port = port
        self.durable = durable
        self._watchdog: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, bin_dir: Path | None = None, *, durable: bool = False) -> PostgresServer:
        """initdb and start a cluster; ``RuntimeError`` with the server's log if it will not start.

        ``durable``: a commit is in the write-ahead log before it returns, as on a real server, so a
        crash (``halt``) loses nothing committed; else commits are quicker and a crash may lose the last."""
        bin_dir = bin_dir or server_binaries()
        if bin_dir is None:
            raise RuntimeError(INSTALL_HINT)
        root = Path(tempfile.mkdtemp(prefix="acp-relay-pg-"))
        (root / "pw").write_text(PASSWORD + "\n")
        if os.geteuid() == 0:
            shutil.chown(root, "postgres")
            shutil.chown(root / "pw", "postgres")
        server = cls(bin_dir, root, 0, durable=durable)
        try:
            server._run("initdb", "-D", str(root / "data"), "-U", "postgres", f"--pwfile={root / 'pw'}",
                        "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
            for _ in range(5):  # a free port can be taken between the look and the start
                server.port = _free_port()
                try:
                    server.resume()
                    server._watch()
                    return server
                except RuntimeError:
                    continue
            raise RuntimeError(f"PostgreSQL would not start: {server.log_tail()}")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    def _watch(self) -> None:
        """Stop this cluster if this process dies without stopping it (``tests/pg_watchdog.py``)."""
        command = [sys.executable, str(WATCHDOG), str(os.getpid()), str(self.bin_dir), str(self.root)]
        self._watchdog = subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def resume(self) -> None:
        """Start the server on its data folder and port (again, after ``halt``)."""
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root}"
                   " -c fsync=off -c full_page_writes=off -c max_connections=200")
        if not self.durable:
            options += " -c synchronous_commit=off"
        self._run("pg_ctl", "-D", str(self.root / "data"), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def halt(self) -> None:
        """Stop the server at once, as a crash would (``-m immediate``: connections cut, no checkpoint),
        keeping its data folder for ``resume``."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin_dir / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip()} {self.log_tail()}")

    def log_tail(self) -> str:
        """The server log's last lines (why it would not start)."""
        log = self.root / "log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else ""

    def url(self, database: str = "postgres", *, user: str = "postgres", password: str = PASSWORD,
            options: str = "") -> str:
        """A URL for ``database`` over TCP, with ``options`` (``-c name=value``) if given."""
        query = f"?options={quote(options)}" if options else ""
        return f"postgresql://{user}:{quote(password)}@127.0.0.1:{self.port}/{database}{query}"

    def psql(self, statement: str, database: str = "postgres") -> str:
        """Run ``statement`` as the superuser over the unix socket; its output."""
        command = [str(self.bin_dir / "psql"), "-h", str(self.root), "-p", str(self.port), "-U", "postgres",
                   "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-c", statement]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout

    def schema_url(self, prefix: str = "t") -> str:
        """A URL whose tables live in a new, empty schema (a fresh store for one test: cheaper than a
        database; the notifications' channels are still the database's, shared)."""
        name = f"{prefix}_{os.getpid()}_{next(_counter)}"
        self.psql(f"CREATE SCHEMA {name}")
        return self.url(options=f"-c search_path={name}")

    def stop(self) -> None:
        """Stop the server at once and remove its folder."""
        try:
            if (self.root / "data" / "postmaster.pid").exists():
                self.halt()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            if self._watchdog is not None:  # it sees the folder gone and exits
                self._watchdog.wait(timeout=10)
