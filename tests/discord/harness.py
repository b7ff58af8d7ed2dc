"""The Discord tier's harness: a relay (real Engine, the scripted agent as a real subprocess, the
Discord surface on the real discord.py client) pointed at the fake Discord.

``relay(...)`` launches the surface the way ``acp-relay run`` does (a ``core.lifecycle.Lifecycle``),
with short intervals; ``await r.restart()`` stops that relay and starts a new one on the same store
file and the same fake (the platform keeps its messages, as Discord does). Tests wait for
conditions with ``until``; timeouts are hang guards only.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.config import RelayConfig
from core.engine.engine import Engine
from core.lifecycle import Lifecycle
from core.store import Store
from surfaces.discord.launching import CAPABILITIES, DiscordRelay, launch
from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.discord_api import FakeDiscord
from tests.waiting import fast_sleep, until

ALICE, BOB, MALLORY = 111_000_000_000_000_001, 111_000_000_000_000_002, 111_000_000_000_000_666
TOKEN_ENV = "DISCORD_BOT_TOKEN"
FAST = dataclasses.replace(CAPABILITIES, edit_interval_s=0.02, typing_refresh_s=0.2)




def prompts(record: Path) -> list[str]:
    """The prompt texts the fake agent received, oldest first."""
    out = []
    if record.exists():
        for line in record.read_text(encoding="utf-8").splitlines():
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if frame.get("method") == "session/prompt":
                out.append("\n".join(b.get("text", "") for b in frame["params"]["prompt"] if b.get("type") == "text"))
    return out


def methods(record: Path) -> list[str]:
    if not record.exists():
        return []
    return [json.loads(line).get("method", "") for line in record.read_text(encoding="utf-8").splitlines()
            if line.strip()]


@dataclass
class Relay:
    """One relay under test on the fake Discord."""

    tmp: Path
    fake: FakeDiscord
    flags: tuple[str, ...] = ()
    discord: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    capabilities: Any = FAST
    #: The waits between reconnects (None: the surface's own, shortened by ``first_reconnect_delay_s``).
    reconnect_sleep: Callable[[float], Awaitable[None]] | None = None
    engine: Engine = field(init=False)
    store: Store = field(init=False)
    launched: DiscordRelay = field(init=False)
    lifecycle: Lifecycle = field(init=False)
    running: bool = False
    #: How long ``launch`` waits for the gateway (a relay standing by for it waits this long).
    startup_wait_s: float = 15.0
    #: How long a store write waits for another writer of the file (SQLite's busy timeout).
    busy_timeout_s: float = 5.0

    @property
    def channel(self) -> int:
        """The allowed channel."""
        return next(iter(self.fake.channels))

    @property
    def other_channel(self) -> int:
        """A channel of the same server that is not allowed."""
        return list(self.fake.channels)[1]

    @property
    def record(self) -> Path:
        return self.tmp / "record.jsonl"

    def config(self) -> RelayConfig:
        args = [str(FAKE_AGENT_PATH), "--record", str(self.record), "--state-dir", str(self.tmp / "agent-state"),
                *self.flags]
        discord_section = {"enabled": True, "token_env": TOKEN_ENV, "allowed_user_ids": [ALICE, BOB],
                           "allowed_channel_ids": [self.channel], "api_base_url": self.fake.api_base,
                           "gateway_url": self.fake.gateway_url, **self.discord}
        data: dict[str, Any] = {
            "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(self.tmp)}},
            "store": {"path": str(self.tmp / "relay.db")},
            "retry": {"attempts": 3, "budget_s": 10, "base_delay_s": 0.05},
            "timeouts": {"prompt_s": 60, "request_s": 10},
            "engine": {"edit_interval_s": 0.02},
            "surfaces": {"dashboard": {"enabled": False}, "discord": discord_section},
        }
        for section, values in self.sections.items():
            data.setdefault(section, {}).update(values)
        return RelayConfig.model_validate(data)

    def open_store(self, config: RelayConfig) -> Store:
        """The relay's store: its SQLite file (a subclass may open another)."""
        return Store.open(config.store.path, busy_timeout_s=self.busy_timeout_s)

    async def start(self, *, wait_ready: bool = True) -> Relay:
        config = self.config()
        self.store = self.open_store(config)
        self.lifecycle = Lifecycle(config, self.store, sleep=fast_sleep, cancel_wait_s=5.0)
        self.engine = self.lifecycle.engine
        tuning: dict[str, Any] = {"sleep": self.reconnect_sleep} if self.reconnect_sleep else {}
        try:
            launched = await self.lifecycle.launch("discord", lambda host, settings: launch(
                host, settings, capabilities=self.capabilities, guild_ready_timeout=0.05,
                first_reconnect_delay_s=0.05, identify_delay_s=0.05, startup_wait_s=self.startup_wait_s, **tuning))
        except BaseException:
            await self.lifecycle.close()
            raise
        assert isinstance(launched, DiscordRelay)
        self.launched = launched
        await self.lifecycle.start()
        self.running = True
        if wait_ready:
            await until(self.launched.client.is_ready, "the client is ready")
        return self

    async def stop(self) -> None:
        if not self.running:
            return
        self.running = False
        await self.lifecycle.close()

    async def restart(self, *, flags: tuple[str, ...] | None = None) -> None:
        await self.stop()
        if flags is not None:
            self.flags = flags
        await self.start()

    # -- looking ----------------------------------------------------------------------------

    def prompts(self) -> list[str]:
        return prompts(self.record)

    def methods(self) -> list[str]:
        return methods(self.record)

    def idle(self) -> bool:
        return all(c.idle for c in self.engine.conversations.values()) and not self.store.pending_outbound()

    async def settled(self) -> None:
        await until(self.idle, "every conversation idle")

    def bot_texts(self, channel_id: int) -> list[str]:
        return [m["content"] for m in self.fake.bot_messages(channel_id)]


RelayFactory = Callable[..., Awaitable[Relay]]
