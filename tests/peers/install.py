"""Install the real ACP agents used by the peer tier, from the npm registry, into a cache dir.

    python tests/peers/install.py          # installs if needed, prints the two executables

Packages (pinned):
  - ``@zed-industries/claude-agent-acp@0.23.1``: a Node program, run as ``node <bin js>``.
  - ``@zed-industries/codex-acp@0.16.0``: a Rust binary shipped in a per-platform optional
    dependency (``@zed-industries/codex-acp-linux-x64`` ...). ``--ignore-scripts`` keeps any
    install script from running, so the binary is located here rather than by a postinstall.

The cache defaults to ``<repo>/.cache/peers`` (override with ``ACP_RELAY_PEER_CACHE``). A second
run is a no-op when both packages are already there at the pinned versions.
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

CLAUDE_PKG = "@zed-industries/claude-agent-acp"
CLAUDE_VERSION = "0.23.1"
CODEX_PKG = "@zed-industries/codex-acp"
CODEX_VERSION = "0.16.0"

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = REPO_ROOT / ".cache" / "peers"

__all__ = [
    "CLAUDE_PKG",
    "CLAUDE_VERSION",
    "CODEX_PKG",
    "CODEX_VERSION",
    "PeerInstallError",
    "PeerPaths",
    "cache_dir",
    "ensure_installed",
    "find_installed",
]


class PeerInstallError(RuntimeError):
    """npm is missing, the install failed, or an executable could not be located."""


@dataclass(frozen=True)
class PeerPaths:
    """``claude_js`` runs as ``node claude_js``; ``codex_bin`` is a native executable."""

    claude_js: Path
    codex_bin: Path
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


def _codex_binary(cache: Path) -> Path:
    """The native codex-acp executable inside its platform package."""
    scope = cache / "node_modules" / "@zed-industries"
    candidates: list[Path] = []
    for suffix in _platform_suffixes():
        candidates.append(scope / f"codex-acp-{suffix}")
    if scope.is_dir():  # any other platform package npm chose (naming may differ)
        candidates += sorted(p for p in scope.iterdir() if p.name.startswith("codex-acp-"))
    exe_names = ("codex-acp", "codex-acp.exe")
    for pkg in candidates:
        if not pkg.is_dir():
            continue
        for name in exe_names:
            for hit in sorted(pkg.rglob(name)):
                if hit.is_file():
                    if not os.access(hit, os.X_OK):
                        hit.chmod(hit.stat().st_mode | 0o111)
                    return hit.resolve()
    raise PeerInstallError(
        f"codex-acp native binary not found under {scope} (looked for platform packages "
        f"{', '.join('codex-acp-' + s for s in _platform_suffixes())})"
    )


def find_installed(cache: Path | None = None) -> PeerPaths | None:
    """The executables if both packages are installed at the pinned versions, else None."""
    cache = cache or cache_dir()
    if _installed_version(cache, CLAUDE_PKG) != CLAUDE_VERSION:
        return None
    if _installed_version(cache, CODEX_PKG) != CODEX_VERSION:
        return None
    try:
        claude_js = _bin_entry(_pkg_dir(cache, CLAUDE_PKG))
        codex_bin = _codex_binary(cache)
    except (OSError, ValueError, PeerInstallError):
        return None
    if not claude_js.is_file():
        return None
    return PeerPaths(claude_js=claude_js, codex_bin=codex_bin, cache=cache)


def ensure_installed(cache: Path | None = None, *, quiet: bool = False) -> PeerPaths:
    """Install both agents into ``cache`` unless already there; return their executables."""
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
    cmd = [
        npm,
        "install",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--prefix",
        str(cache),
        f"{CLAUDE_PKG}@{CLAUDE_VERSION}",
        f"{CODEX_PKG}@{CODEX_VERSION}",
    ]
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
        got = (_installed_version(cache, CLAUDE_PKG), _installed_version(cache, CODEX_PKG))
        # Surface the precise reason (e.g. the codex binary could not be located).
        _codex_binary(cache)
        raise PeerInstallError(f"after npm install, versions found: {got}")
    return found


def main() -> int:
    try:
        paths = ensure_installed()
    except PeerInstallError as exc:
        print(f"peer install failed: {exc}", file=sys.stderr)
        return 1
    print(f"claude-agent-acp: node {paths.claude_js}")
    print(f"codex-acp: {paths.codex_bin}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
