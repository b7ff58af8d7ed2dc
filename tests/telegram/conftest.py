"""Fixtures of the Telegram tier: the fake Bot API server, and a relay running the real Telegram
surface (PTB's Application) against it, with the scripted fake ACP agent as a real subprocess.

``tg(...)`` builds the relay as ``acp-relay run`` does (a ``core.lifecycle.Lifecycle`` launching the
Telegram surface) on a file-backed store; ``await r.restart()`` starts a new relay on the same store and agent state.
The engine's sleep records every requested delay (``r.sleeps``) and waits at most a few
milliseconds, so paces and ``retry_after`` holds are asserted as requested delays, never timed.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.config import RelayConfig
from core.engine.engine import Engine
from core.lifecycle import Lifecycle
from core.store import Store
from surfaces.telegram.launching import TelegramRelay, launch
from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.telegram_api import TOKEN, FakeBotApi
from tests.waiting import until

USER = 4242  # the allowed person; their private chat has the same id
GROUP = -1001234567890



@pytest.fixture
async def api() -> AsyncIterator[FakeBotApi]:
    server = await FakeBotApi().start()
    yield server
    await server.close()


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    monkeypatch.delenv("TELEGRAM_WEBHOOK_SECRET", raising=False)


@dataclass
class TgRelay:
    """One relay under test: the store file, the engine, the launched Telegram surface."""

    api: FakeBotApi
    tmp: Path
    flags: tuple[str, ...] = ()
    telegram: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    sleeps: list[float] = field(default_factory=list)
    busy_timeout_s: float = 5.0
    #: The pauses between polls (None: the surface's own ``asyncio.sleep``).
    poll_sleep: Callable[[float], Awaitable[None]] | None = None
    engine: Engine = field(init=False)
    store: Store = field(init=False)
    launched: TelegramRelay = field(init=False)
    lifecycle: Lifecycle = field(init=False)
    running: bool = False

    def config(self) -> RelayConfig:
        work = self.tmp / "work"
        work.mkdir(exist_ok=True)
        args = [str(FAKE_AGENT_PATH), "--record", str(self.tmp / "record.jsonl"),
                "--state-dir", str(self.tmp / "agent-state"), *self.flags]
        data: dict[str, Any] = {
            "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(work)}},
            "store": {"path": str(self.tmp / "relay.db")},
            "retry": {"attempts": 3, "budget_s": 10, "base_delay_s": 0.05},
            "timeouts": {"prompt_s": 60, "request_s": 10},
            "surfaces": {"dashboard": {"enabled": False},
                         "telegram": {"enabled": True, "allowed_user_ids": [USER], "api_base_url": self.api.url,
                                      "poll_timeout_s": 1, **self.telegram}},
        }
        for section, values in self.sections.items():
            data.setdefault(section, {}).update(values)
        return RelayConfig.model_validate(data)

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        await asyncio.sleep(min(delay, 0.02))

    async def start(self) -> TgRelay:
        config = self.config()
        self.store = Store.open(config.store.path, busy_timeout_s=self.busy_timeout_s)
        self.lifecycle = Lifecycle(config, self.store, sleep=self.sleep, cancel_wait_s=5.0)
        self.engine = self.lifecycle.engine
        poll_sleep = self.poll_sleep
        try:
            launched = await self.lifecycle.launch(
                "telegram", None if poll_sleep is None else lambda host, s: launch(host, s, sleep=poll_sleep))
        except BaseException:
            await self.lifecycle.close()
            raise
        assert isinstance(launched, TelegramRelay)
        self.launched = launched
        await self.lifecycle.start()
        self.running = True
        return self

    async def close(self) -> None:
        if not self.running:
            return
        self.running = False
        await self.lifecycle.close()

    async def restart(self) -> None:
        await self.close()
        await self.start()

    # -- looking ---------------------------------------------------------------------------

    def idle(self) -> bool:
        convs = self.engine.conversations.values()
        return (all(not c.busy and not c.queue for c in convs) and not self.lifecycle.hosting.busy
                and not self.api.pending_updates)

    async def settled(self) -> None:
        await until(self.idle, "the relay is idle and every update is confirmed")

    def texts(self, chat: int, topic: int | None = None) -> list[str]:
        return [m["text"] for m in self.api.bot_messages(chat, topic)]

    def frames(self) -> list[dict[str, Any]]:
        """What the fake agent received, oldest first."""
        path = self.tmp / "record.jsonl"
        if not path.exists():
            return []
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    def prompts(self) -> list[str]:
        return ["\n".join(b.get("text", "") for b in f["params"]["prompt"] if b.get("type") == "text")
                for f in self.frames() if f.get("method") == "session/prompt"]

    def methods(self) -> list[str]:
        return [f.get("method", "") for f in self.frames()]


TgFactory = Callable[..., Awaitable[TgRelay]]


@pytest.fixture
async def tg(api: FakeBotApi, tmp_path: Path) -> AsyncIterator[TgFactory]:
    """``await tg("--models", "a,b", telegram={"mode": ...}, engine={...})``: a started relay."""
    made: list[TgRelay] = []

    async def build(*flags: str, telegram: dict[str, Any] | None = None, busy_timeout_s: float = 5.0,
                    start: bool = True, poll_sleep: Callable[[float], Awaitable[None]] | None = None,
                    **sections: Any) -> TgRelay:
        base = tmp_path / f"relay{len(made)}"
        base.mkdir()
        relay = TgRelay(api, base, tuple(flags), dict(telegram or {}), dict(sections), busy_timeout_s=busy_timeout_s,
                        poll_sleep=poll_sleep)
        made.append(relay)
        return await relay.start() if start else relay

    yield build
    for relay in made:
        await relay.close()


async def on_a_webhook(tg: TgFactory, api: FakeBotApi, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> TgRelay:
    """A relay receiving by webhook (``kwargs`` for ``tg``), its webhook set."""
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "s3cret-value_1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    r = await tg(telegram={"mode": "webhook", "webhook_url": f"http://127.0.0.1:{port}/telegram/hook",
                           "webhook_port": port}, **kwargs)
    await until(lambda: api.webhook, "setWebhook was called")
    return r
