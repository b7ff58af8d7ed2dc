#!/usr/bin/env python3
"""Record a real agent's session as a capture (``tests/fixtures/captures/*.jsonl``). Stdlib only.

    python tests/peers/record.py --out FILE --meta JSON [--sub PATH=<name>]... -- COMMAND [ARGS...]

Runs COMMAND as the agent, passing stdin, stdout and stderr through unchanged, and writes one line per
frame: first ``{"_meta": {...}}`` (``--meta``, e.g. package, version, scenario), then
``{"t", "dir": "client->agent" | "agent->client" | "stderr" | "exit", "data"}``. Each ``--sub``
replaces a machine path (a temporary HOME, the workspace) by a placeholder in what is written, so a
capture names no directory of the machine it was recorded on. Used by the peer tier when
``ACP_RELAY_RECORD_DIR`` is set (see harness.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from typing import Any, TextIO


class Recorder:
    """Writes frames to the capture as they pass, with their time since the start."""

    def __init__(self, out: TextIO, subs: list[tuple[str, str]]) -> None:
        self.out = out
        # Longest first: a workspace under HOME keeps its own placeholder.
        self.subs = sorted(subs, key=lambda s: -len(s[0]))
        self.started = time.monotonic()

    def _clean(self, text: str) -> str:
        for path, name in self.subs:
            text = text.replace(path, name)
        return text

    def write(self, where: str, data: Any) -> None:
        entry = {"t": round(time.monotonic() - self.started, 3), "dir": where, "data": data}
        self.out.write(self._clean(json.dumps(entry, ensure_ascii=False)) + "\n")
        self.out.flush()

    def line(self, where: str, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip():
            return
        data: Any = text
        if where != "stderr":
            try:
                data = json.loads(text)
            except ValueError:
                data = text  # a non-JSON line on stdout is kept as it was seen
        self.write(where, data)


async def _pump(src: asyncio.StreamReader, dst: Any, rec: Recorder, where: str) -> None:
    while True:
        raw = await src.readline()
        if not raw:
            break
        rec.line(where, raw)
        dst.write(raw)
        await dst.drain() if isinstance(dst, asyncio.StreamWriter) else dst.flush()
    if isinstance(dst, asyncio.StreamWriter):
        dst.close()


async def _main(args: argparse.Namespace) -> int:
    subs = [tuple(s.split("=", 1)) for s in args.sub]
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(json.dumps({"_meta": json.loads(args.meta)}) + "\n")
        rec = Recorder(out, [(p, n) for p, n in subs if p])
        proc = await asyncio.create_subprocess_exec(
            *args.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=64 * 1024 * 1024)
        assert proc.stdin and proc.stdout and proc.stderr
        loop = asyncio.get_running_loop()
        stdin = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
        # Our own end of the shutdown ladder: SIGTERM to us reaches the agent the same way.
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda s=sig: proc.send_signal(s))
        feeder = asyncio.create_task(_pump(stdin, proc.stdin, rec, "client->agent"))
        await asyncio.gather(_pump(proc.stdout, sys.stdout.buffer, rec, "agent->client"),
                             _pump(proc.stderr, sys.stderr.buffer, rec, "stderr"))
        code = await proc.wait()
        feeder.cancel()
        rec.write("exit", code)
    return code if code >= 0 else 128 - code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--meta", default="{}")
    parser.add_argument("--sub", action="append", default=[], help="PATH=<placeholder>")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return asyncio.run(_main(args))


if __name__ == "__main__":
    raise SystemExit(main())
