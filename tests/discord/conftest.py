"""Fixtures of the Discord tier (the harness is in ``harness.py``).

This directory has no ``__init__.py`` on purpose: as a package named ``discord`` it would shadow
discord.py itself (a regular package always wins over this namespace directory).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from discord.gateway import DiscordWebSocket
from discord.http import Route

from tests.discord.harness import FAST, TOKEN_ENV, Relay, RelayFactory
from tests.fakes.discord_api import FakeDiscord


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    fake = await FakeDiscord().start()
    yield fake
    await fake.close()


@pytest.fixture
async def relay(tmp_path: Path, fake_discord: FakeDiscord,
                monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RelayFactory]:
    """``await relay("--models", "a,b", discord={...}, timeouts={...})``: a started relay."""
    # launch() sets discord.py's class-level endpoints; monkeypatch puts Discord's back afterwards.
    monkeypatch.setattr(Route, "BASE", Route.BASE)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", DiscordWebSocket.DEFAULT_GATEWAY)
    monkeypatch.setenv(TOKEN_ENV, fake_discord.token)
    made: list[Relay] = []

    async def build(*flags: str, discord: dict[str, Any] | None = None, capabilities: Any = FAST,
                    wait_ready: bool = True, reconnect_sleep: Any = None, busy_timeout_s: float = 5.0,
                    **sections: Any) -> Relay:
        r = Relay(tmp_path, fake_discord, tuple(flags), dict(discord or {}), dict(sections), capabilities,
                  reconnect_sleep, busy_timeout_s=busy_timeout_s)
        made.append(r)
        return await r.start(wait_ready=wait_ready)

    yield build
    for r in made:
        await r.stop()
    print(fake_discord.transcript())  # shown by pytest when the test failed
