"""``engine.edit_interval_s`` paces streamed edits on every surface that does not name its own."""

from __future__ import annotations

from pathlib import Path

from core.config import RelayConfig
from core.engine.surface import Capabilities
from core.lifecycle import build_engine
from core.store import Store
from tests.fakes.memory_surface import MemorySurface


def test_the_configured_interval_applies_unless_the_surface_names_its_own(tmp_path: Path) -> None:
    config = RelayConfig.model_validate({"engine": {"edit_interval_s": 3.5}})
    with Store.open(tmp_path / "relay.db") as store:
        engine = build_engine(config, store)
        plain = MemorySurface(capabilities=Capabilities(max_message_length=4096))
        fast = MemorySurface(name="fast", capabilities=Capabilities(max_message_length=4096, edit_interval_s=0.2))
        assert engine.outbox.streamer(plain, "memory:1").interval_s == 3.5
        assert engine.outbox.streamer(fast, "fast:1").interval_s == 0.2
