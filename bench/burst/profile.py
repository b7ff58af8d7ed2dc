"""The top of a profile: py-spy's (``--format raw --function``: one stack per line, then its sample
count) or cProfile's (a ``.prof`` file of ``bench.burst.cprofiled``: CPU time by function).

Prints where the samples (or the CPU time) end (self time, by package and by function), the functions
that hold the most on their stack (inclusive, the event loop's own frames left out), and the share of
each suspect issue 24 names, so a profile confirms or refutes each one by number.

    python -m bench.burst.profile FILE [FILE ...] [--top 12] [--rate 100]
"""

from __future__ import annotations

import argparse
import pstats
import re
from collections import Counter
from pathlib import Path

__all__ = ["DEFAULT_RATE", "SUSPECTS", "CpuProfile", "Profile", "main"]

#: py-spy's own sampling rate (a second); ``bench_burst --rate`` records at another.
DEFAULT_RATE = 100
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
#: Frames every stack of an asyncio program goes through: left out of the inclusive list.
_LOOP = ("asyncio/", "<module>", "core/cli.py", "acp-relay")
#: Threads blocked in a wait that py-spy still counts as active (a child watcher in ``waitpid``, discord.py's
#: heartbeat thread in ``Event.wait``): left out of the shares, counted apart.
#: An executor's worker thread whose innermost frame is its own loop waits for work (a work item
#: running would be on the stack): idle too.
_BLOCKED = ("asyncio/unix_events.py:ThreadedChildWatcher._do_waitpid", "threading.py:Condition.wait",
            "threading.py:Event.wait", "selectors.py:EpollSelector.select", "concurrent/futures/thread.py:_worker")
#: Issue 24's suspects, as frames to look for (a substring of ``file:function``).
SUSPECTS = {
    "httpcore's pool re-scans": "httpcore/_async/connection_pool.py:AsyncConnectionPool._assign_requests",
    "httpcore without sniffio": "httpcore/_synchronization.py:current_async_library",
    "discord.py rate-limit records": "discord/http.py:HTTPClient._try_clear_expired_ratelimits",
    "Pacer._forget_idle": "core/engine/pacing.py:Pacer._forget_idle",
    "dashboard Transcript._prune": "surfaces/dashboard/transcript.py:Transcript._prune",
    "Slack status calls": "surfaces/slack/indicator.py:",
}


def _label(frame: str) -> str:
    match = _FRAME.match(frame)
    if match is None:
        return frame
    return f"{match['file']}:{match['func']}"


class Profile:
    """One raw py-spy file: samples by stack."""

    def __init__(self, path: Path, rate: int = DEFAULT_RATE) -> None:
        self.path = path
        self.rate = rate  # samples a second, as recorded (``bench_burst --rate``)
        self.stacks: list[tuple[list[str], int]] = []
        self.blocked = 0
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                frames = [_label(f) for f in stack.split(";")]
                if frames[-1] in _BLOCKED:
                    self.blocked += int(count)
                else:
                    self.stacks.append((frames, int(count)))
        self.total = sum(n for _, n in self.stacks)

    def self_by(self, key: str = "function") -> Counter[str]:
        """Samples by their innermost frame (``function``) or its top package (``package``)."""
        out: Counter[str] = Counter()
        for frames, n in self.stacks:
            leaf = frames[-1]
            out[leaf if key == "function" else leaf.split("/", 1)[0].split(":", 1)[0]] += n
        return out

    def inclusive(self) -> Counter[str]:
        """Samples that have the function anywhere on their stack (once per stack)."""
        out: Counter[str] = Counter()
        for frames, n in self.stacks:
            for frame in set(frames):
                if not frame.startswith(_LOOP):
                    out[frame] += n
        return out

    def share(self, fragment: str) -> float:
        """The share of samples with a frame containing ``fragment`` on their stack."""
        hit = sum(n for frames, n in self.stacks if any(fragment in f for f in frames))
        return hit / self.total if self.total else 0.0

    def lines(self, top: int) -> list[str]:
        if not self.total:
            return [f"{self.path.name}: no samples"]
        pc = 100.0 / self.total
        out = [f"{self.path.name}: {self.total} samples (at {self.rate} a second: about "
               f"{self.total / self.rate:.2g} s on CPU; "
               f"{self.blocked} more of threads blocked in a wait, left out)"]
        packages = self.self_by("package").most_common(8)
        out.append("  self, by package: " + ", ".join(f"{name} {n * pc:.0f}%" for name, n in packages))
        out.append("  self, by function:")
        out += [f"    {n * pc:5.1f}%  {name}" for name, n in self.self_by().most_common(top)]
        out.append("  inclusive (on the stack), the event loop's frames left out:")
        out += [f"    {n * pc:5.1f}%  {name}" for name, n in self.inclusive().most_common(top)]
        out.append("  issue 24's suspects (inclusive): " + ", ".join(
            f"{name} {self.share(fragment) * 100:.1f}%" for name, fragment in SUSPECTS.items()))
        return out


def _short(file: str) -> str:
    """A code file as py-spy names it: from the package on (``core/...``, ``aiohttp/...``, ``asyncio/...``)."""
    for cut in ("/site-packages/", "/lib/python3.11/", "/lib/python3.12/", "/lib/python3.13/"):
        if cut in file:
            return file.split(cut, 1)[1]
    for top in ("/core/", "/surfaces/", "/bench/", "/tests/"):
        if top in file:
            return top[1:] + file.rsplit(top, 1)[1]
    return file


class CpuProfile:
    """One ``.prof`` file of ``bench.burst.cprofiled``: CPU seconds of the event loop's thread by function."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # (file, line, function) -> (primitive calls, calls, self seconds, inclusive seconds, callers)
        raw = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
        self.rows = [(f"{_short(file)}:{func}", calls, own, inclusive)
                     for (file, _line, func), (_cc, calls, own, inclusive, _callers) in raw.items()]
        self.total = sum(own for _, _, own, _ in self.rows)

    def share(self, fragment: str) -> float:
        """The largest inclusive share of a function ``fragment`` names (``file:Class.function``: cProfile
        knows the function's own name only; ``file:`` any function of that file)."""
        file, _, func = fragment.partition(":")
        name = func.rsplit(".", 1)[-1]
        hits = [inclusive for label, _, _, inclusive in self.rows
                if label.startswith(file + ":") and label.partition(":")[2].startswith(name)]
        return max(hits, default=0.0) / self.total if self.total else 0.0

    def lines(self, top: int) -> list[str]:
        if not self.total:
            return [f"{self.path.name}: nothing recorded"]
        pc = 100.0 / self.total
        out = [f"{self.path.name}: {self.total:.2f} s of CPU in the event loop's thread (under cProfile, which "
               "slows calls: compare shares)"]
        packages: Counter[str] = Counter()
        for label, _, own, _ in self.rows:
            packages[label.split("/", 1)[0].split(":", 1)[0]] += own
        out.append("  self, by package: " + ", ".join(f"{name} {t * pc:.0f}%" for name, t in packages.most_common(8)))
        out.append("  self, by function (calls):")
        out += [f"    {own * pc:5.1f}%  {label} ({calls})"
                for label, calls, own, _ in sorted(self.rows, key=lambda r: -r[2])[:top]]
        out.append("  inclusive, the event loop's frames left out (calls; a coroutine counts each step):")
        inner = [r for r in self.rows if not r[0].startswith(_LOOP)]
        out += [f"    {inclusive * pc:5.1f}%  {label} ({calls})"
                for label, calls, _, inclusive in sorted(inner, key=lambda r: -r[3])[:top]]
        out.append("  issue 24's suspects (inclusive): " + ", ".join(
            f"{name} {self.share(fragment) * 100:.1f}%" for name, fragment in SUSPECTS.items()))
        return out


def main() -> None:
    """Print the top of each profile given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE, help="py-spy's samples a second, as recorded")
    args = parser.parse_args()
    for path in args.files:
        print("\n".join((CpuProfile(path) if path.suffix == ".prof" else Profile(path, args.rate)).lines(args.top)))


if __name__ == "__main__":
    main()
