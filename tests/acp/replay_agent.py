#!/usr/bin/env python3
"""Replay a recorded ACP session (a ``captures/*.jsonl`` file) as an agent. Stdlib only.

    python tests/acp/replay_agent.py CAPTURE [--record FILE]

The capture's frames are cut into segments: each client->agent request or notification owns the
agent->client frames (and stderr lines) recorded after it, up to the next one. When our client
sends a request with method M, the first unused recorded request with method M is replayed: its
segment is written in order, responses carrying OUR request id in place of the recorded one (a
response may sit in a later segment: the prompt answered after session/cancel). A recorded
agent->client request (session/request_permission) is written as recorded and the segment waits
for our answer before going on. Notifications from the client (session/cancel) replay their own
segment the same way. Requests the capture does not hold: session/set_mode and authenticate are
answered ``{}``, anything else -32601. Frames our client sends are appended to FILE (--record).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

_DEFAULT_OK = {"session/set_mode", "authenticate"}


class Replay:
    def __init__(self, capture: str, record: str | None) -> None:
        self.record_path = record
        self.triggers: list[dict[str, Any]] = []
        self.id_map: dict[Any, Any] = {}  # recorded request id -> our request id
        self.deferred: list[dict[str, Any]] = []  # client frames read while waiting for an answer
        current: list[tuple[str, Any]] | None = None
        with open(capture, encoding="utf-8") as f:
            for line in f:
                entry = json.loads(line)
                where, data = entry.get("dir"), entry.get("data")
                if where == "client->agent" and isinstance(data, dict) and "method" in data:
                    current = []
                    self.triggers.append({"method": data["method"], "id": data.get("id"),
                                          "request": "id" in data, "segment": current, "used": False})
                elif where in ("agent->client", "stderr") and current is not None:
                    current.append((where, data))

    # -- io ----------------------------------------------------------------------------------

    @staticmethod
    def send(frame: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(frame, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def read(self) -> dict[str, Any] | None:
        line = sys.stdin.readline()
        if not line:
            return None
        frame = json.loads(line)
        if self.record_path:
            with open(self.record_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(frame) + "\n")
        return frame

    # -- replay ------------------------------------------------------------------------------

    def trigger(self, method: str, request: bool) -> dict[str, Any] | None:
        for trig in self.triggers:
            if not trig["used"] and trig["method"] == method and trig["request"] == request:
                trig["used"] = True
                return trig
        return None

    def play(self, segment: list[tuple[str, Any]]) -> bool:
        """Write one segment; False when stdin closed while waiting for an answer."""
        for where, data in segment:
            if where == "stderr":
                sys.stderr.write(f"{data}\n")
                sys.stderr.flush()
                continue
            frame = dict(data)
            if "method" not in frame and "id" in frame:  # a response: give it our request id
                frame["id"] = self.id_map.get(frame["id"], frame["id"])
            self.send(frame)
            if "method" in frame and "id" in frame and not self.wait_answer(frame["id"]):
                return False
        return True

    def wait_answer(self, request_id: Any) -> bool:
        while True:
            frame = self.read()
            if frame is None:
                return False
            if "method" not in frame and frame.get("id") == request_id:
                return True
            self.deferred.append(frame)

    def handle(self, frame: dict[str, Any]) -> bool:
        method = frame.get("method")
        if not isinstance(method, str):
            return True  # a stray answer
        if "id" in frame:
            trig = self.trigger(method, request=True)
            if trig is None:
                if method in _DEFAULT_OK:
                    self.send({"jsonrpc": "2.0", "id": frame["id"], "result": {}})
                else:
                    self.send({"jsonrpc": "2.0", "id": frame["id"],
                               "error": {"code": -32601, "message": "Method not found", "data": method}})
                return True
            self.id_map[trig["id"]] = frame["id"]
            return self.play(trig["segment"])
        trig = self.trigger(method, request=False)
        return self.play(trig["segment"]) if trig is not None else True

    def run(self) -> int:
        while True:
            frame = self.deferred.pop(0) if self.deferred else self.read()
            if frame is None or not self.handle(frame):
                return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture")
    parser.add_argument("--record")
    args = parser.parse_args()
    return Replay(args.capture, args.record).run()


if __name__ == "__main__":
    sys.exit(main())
