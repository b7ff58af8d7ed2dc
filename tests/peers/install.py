"""Install the real ACP agents used by the peer tier, from the npm registry, into a cache dir.

    python tests/peers/install.py          # installs if needed, prints each agent's command line

Packages (pinned; ``npm view <name> version`` gives the newest):
  - ``@zed-industries/claude-agent-acp@0.23.1``, the name most guides still give, and
    ``@agentclientprotocol/claude-agent-acp@0.101.0``, what ``npm install`` brings today:
    Node programs, run as ``node <bin js>`` (0.101 declares node >= 22 and runs on 20).
  - ``@zed-industries/codex-acp@0.16.0``: a Rust binary shipped in a per-platform optional
    dependency (``@zed-industries/codex-acp-linux-x64`` ...). ``--ignore-scripts`` keeps any
    install script from running, so the binary is located here rather than by a postinstall.
  - ``@agentclientprotocol/codex-acp@2.6.0``: a TypeScript adapter over the Codex app server
    (``@openai/codex``, whose binary also comes in a platform package), run as ``node dist/index.js``.
  - ``@google/gemini-cli@0.61.0`` in its ACP mode (``--acp``).
  - ``@github/copilot@1.0.102`` (``copilot --acp``): a native binary in ``@github/copilot-linux-x64``
    (the npm loader only finds and runs it), in its offline bring-your-own-key mode.
  - ``opencode-ai@1.18.33`` (``opencode acp``): a native binary in ``opencode-linux-x64``.
  - ``@qwen-code/qwen-code@0.24.4`` (``qwen --acp``; declares node >= 22, runs on 20).
  - ``@zed-industries/claude-code-acp@0.16.2``, the older name of claude-agent-acp many guides give.
  - ``@augmentcode/auggie@0.36.0`` (``auggie --acp``): needs an Augment account; the tier only checks
    that its refusal to start a session without one reads as a sign-in problem.

Each pin is the newest release on the registry when it was last checked (2026-12); the README's agents
table says what differs from the releases people may still run.

The cache defaults to ``<repo>/.cache/peers`` (override with ``ACP_RELAY_PEER_CACHE``). A second
run is a no-op when every package is already there at its pinned version.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PACKAGES",
    "Package",
    "PeerInstallError",
    "PeerPaths",
    "cache_dir",
    "ensure_installed",
    "find_installed",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = REPO_ROOT / ".cache" / "peers"


@dataclass(frozen=True)
class Package:
    """One agent package: ``key`` names it in the tests; ``native`` ones ship a platform binary."""

    key: str
    name: str
    version: str
    native: bool = False
    args: tuple[str, ...] = ()  # arguments the agent needs to speak ACP
    binary: str = ""  # a native package's executable and platform-package stem, when not its name


PACKAGES = (
    Package("claude-0.23.1", "@zed-industries/claude-agent-acp", "0.23.1"),
    Package("claude-0.101.0", "@agentclientprotocol/claude-agent-acp", "0.101.0"),
    Package("codex-0.16.0", "@zed-industries/codex-acp", "0.16.0", native=True),
    Package("codex-2.6.0", "@agentclientprotocol/codex-acp", "2.6.0"),
    Package("gemini-0.61.0", "@google/gemini-cli", "0.61.0", args=("--acp",)),
    Package("copilot-1.0.102", "@github/copilot", "1.0.102", native=True, args=("--acp",)),
    Package("opencode-1.18.33", "opencode-ai", "1.18.33", native=True, args=("acp",), binary="opencode"),
    Package("qwen-0.24.4", "@qwen-code/qwen-code", "0.24.4", args=("--acp",)),
    Package("claudecode-0.16.2", "@zed-industries/claude-code-acp", "0.16.2"),
    Package("auggie-0.36.0", "@augmentcode/auggie", "0.36.0", args=("--acp",)),
)


class PeerInstallError(RuntimeError):
    """npm is missing, the install failed, or an executable could not be located."""


@dataclass(frozen=True)
class PeerPaths:
    """Each package's command line by ``Package.key`` (``node <js>`` or a native executable)."""

    commands: dict[str, tuple[str, ...]]
    cache: Path


def cache_dir() -> Path:
    env = os.environ.get("ACP_RELAY_PEER_CACHE", "").strip()
    return Path(env).expanduser().resolve() if env else DEFAULT_CACHE


def _pkg_dir(cache: Path, name: str) -> Path:
    return cache / "node_modules" / Path(*name.split("/"))


def _installed_version(cache: Path, name: str) -> str | None:
    try:
        meta = json.loads((_pkg_dir(cache, name) / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = meta.get("version") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _bin_entry(pkg_dir: Path) -> Path:
    meta = json.loads((pkg_dir / "package.json").read_text())
    bins = meta.get("bin")
    if isinstance(bins, str):
        rel = bins
    elif isinstance(bins, dict) and bins:
        name = meta.get("name", "").split("/")[-1]
        rel = bins.get(name) or next(iter(bins.values()))
    else:
        rel = meta.get("main", "dist/index.js")
    return (pkg_dir / rel).resolve()


def _platform_suffixes() -> list[str]:
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    system = sys.platform
    if system.startswith("linux"):
        return [f"linux-{arch}", f"linux-{arch}-gnu", f"linux-{arch}-musl"]
    if system == "darwin":
        return [f"darwin-{arch}"]
    if system.startswith("win"):
        return [f"win32-{arch}", f"windows-{arch}"]
    return [f"{system}-{arch}"]


def _native_binary(cache: Path, name: str, binary: str = "") -> Path:
    """The native executable of ``name`` inside its platform package (``<name>-linux-x64`` ...)."""
    scope_name, _, bare = name.rpartition("/")
    bare = binary or bare
    scope = cache / "node_modules" / scope_name
    candidates = [scope / f"{bare}-{suffix}" for suffix in _platform_suffixes()]
    if scope.is_dir():  # any other platform package npm chose (naming may differ)
        candidates += sorted(p for p in scope.iterdir() if p.name.startswith(f"{bare}-"))
    for pkg in candidates:
        if not pkg.is_dir():
            continue
        for exe in (bare, f"{bare}.exe"):
            for hit in sorted(pkg.rglob(exe)):
                if hit.is_file():
                    if not os.access(hit, os.X_OK):
                        hit.chmod(hit.stat().st_mode | 0o111)
                    return hit.resolve()
    raise PeerInstallError(f"{bare} native binary not found under {scope} (looked for platform packages "
                           f"{', '.join(f'{bare}-{s}' for s in _platform_suffixes())})")


def _command(cache: Path, package: Package) -> tuple[str, ...]:
    if package.native:
        return (str(_native_binary(cache, package.name, package.binary)), *package.args)
    entry = _bin_entry(_pkg_dir(cache, package.name))
    if not entry.is_file():
        raise PeerInstallError(f"{package.name}: {entry} is missing")
    return ("node", str(entry), *package.args)


def find_installed(cache: Path | None = None) -> PeerPaths | None:
    """Every agent's command line if all packages are installed at their pinned versions, else None."""
    cache = cache or cache_dir()
    if any(_installed_version(cache, p.name) != p.version for p in PACKAGES):
        return None
    try:
        return PeerPaths({p.key: _command(cache, p) for p in PACKAGES}, cache)
    except (OSError, ValueError, PeerInstallError):
        return None


def ensure_installed(cache: Path | None = None, *, quiet: bool = False) -> PeerPaths:
    """Install every agent into ``cache`` unless already there; return their command lines."""
    cache = cache or cache_dir()
    found = find_installed(cache)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise PeerInstallError("npm not found on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    # A package.json of its own keeps npm from walking up to some enclosing project.
    manifest = cache / "package.json"
    if not manifest.exists():
        manifest.write_text(json.dumps({"name": "acp-relay-peers", "private": True}, indent=2) + "\n")
    # --prefer-offline: what the npm cache already holds is used without asking the registry again.
    cmd = [npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline",
           "--loglevel=error", "--prefix", str(cache), *(f"{p.name}@{p.version}" for p in PACKAGES)]
    proc = subprocess.run(
        cmd,
        cwd=cache,
        stdout=subprocess.PIPE if quiet else sys.stderr,
        stderr=subprocess.STDOUT if quiet else None,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        out = (proc.stdout or "")[-4000:] if quiet else ""
        raise PeerInstallError(f"npm install failed (exit {proc.returncode}): {' '.join(cmd)}\n{out}")
    found = find_installed(cache)
    if found is None:
        got = {p.name: _installed_version(cache, p.name) for p in PACKAGES}
        for p in PACKAGES:  # surface the precise reason (e.g. a native binary could not be located)
            _command(cache, p)
        raise PeerInstallError(f"after npm install, versions found: {got}")
    return found


def main() -> int:
    try:
        paths = ensure_installed()
    except PeerInstallError as exc:
        print(f"peer install failed: {exc}", file=sys.stderr)
        return 1
    for key, command in paths.commands.items():
        print(f"{key}: {' '.join(command)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
