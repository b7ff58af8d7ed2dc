"""Kiro ignores a session/load without its session file: the relay keeps the ``_meta`` that
session/new gave, in the store, and sends it back when a restarted relay resumes the session."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path

from core.config import RelayConfig
from core.engine.engine import Engine
from core.lifecycle import Lifecycle
from core.plugin import SurfaceSettings
from core.store import Store
from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.memory_surface import MemorySurface, attaching

KEY = "memory:1"


async def _until(pred: Callable[[], object], what: str) -> None:
    async with asyncio.timeout(15):
        while not pred():
            await asyncio.sleep(0.01)


def _config(tmp_path: Path) -> RelayConfig:
    args = [str(FAKE_AGENT_PATH), "--kiro", "--state-dir", str(tmp_path / "agent-state"),
            "--record", str(tmp_path / "frames.jsonl")]
    return RelayConfig.model_validate({
        "agents": {"kiro": {"command": sys.executable, "args": args, "cwd": str(tmp_path), "backend": "kiro",
                            "tool_gate": "allow"}},
        "store": {"path": str(tmp_path / "relay.db")},
    })


def _frames(tmp_path: Path, method: str) -> list[dict[str, object]]:
    lines = (tmp_path / "frames.jsonl").read_text().splitlines()
    return [f for f in map(json.loads, lines) if f.get("method") == method]


async def _turn(engine: Engine, surface: MemorySurface, text: str, message_id: str) -> None:
    before = len(surface.texts(KEY))
    await engine.handle_message(surface.inbound(text, user_id="u1", conversation_key=KEY, message_id=message_id))
    await _until(lambda: len(surface.texts(KEY)) > before and not engine.conversations[KEY].busy, "the answer")


async def test_a_restarted_relay_resumes_a_kiro_session_with_its_session_file(tmp_path: Path) -> None:
    config = _config(tmp_path)
    surface = MemorySurface()
    relay = Lifecycle(config, Store.open(config.store.path))
    await relay.launch("memory", attaching(surface, ["u1"]), settings=SurfaceSettings(enabled=True))
    await relay.start()
    await _turn(relay.engine, surface, "text first answer", "m1")
    rec = relay.store.get_conversation(KEY)
    assert rec is not None and rec.session_id
    assert rec.session_meta == {"_kiro.dev/session_file": f"~/.kiro/sessions/{rec.session_id}.json"}
    await relay.close()

    relay = Lifecycle(config, Store.open(config.store.path))  # the relay restarts: new engine, new agent process
    await relay.launch("memory", attaching(surface, ["u1"]), settings=SurfaceSettings(enabled=True))
    await relay.start()
    await _turn(relay.engine, surface, "text second answer", "m2")
    again = relay.store.get_conversation(KEY)
    await relay.close()

    assert again is not None and again.session_id == rec.session_id  # same ACP session, not a reset
    loads = _frames(tmp_path, "session/load")
    assert len(loads) == 1
    assert loads[0]["params"]["_meta"] == rec.session_meta  # type: ignore[index]
    assert not any("new conversation" in t.lower() or "could not" in t.lower() for t in surface.texts(KEY))
