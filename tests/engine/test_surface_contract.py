"""The Surface protocol contract, run against every surface in ``SURFACE_FACTORIES``.

A factory is an async context manager yielding a ``SurfaceUnderTest``: the surface, a
conversation key it can post to, and ``read_text(message_id)`` that reads back what the platform
shows (for surfaces backed by a fake platform server, from the server's state). Surfaces join by
appending their factory to the list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import pytest
from discord.gateway import DiscordWebSocket
from discord.http import Route
from fakes.discord_api import FakeDiscord
from fakes.memory_surface import MemorySurface

from core.engine.router import ACTIONS
from core.engine.surface import (
    Button,
    DeliveryError,
    MessageTooLong,
    NotModified,
    Surface,
)
from surfaces.dashboard.surface import DashboardSurface
from surfaces.dashboard.transcript import Transcript
from surfaces.discord.gateway import RelayClient, use_endpoints
from surfaces.discord.surface import DiscordSurface


@dataclass(frozen=True)
class SurfaceUnderTest:
    surface: Surface
    conversation_key: str
    read_text: Callable[[str], str]


@asynccontextmanager
async def memory_surface() -> AsyncIterator[SurfaceUnderTest]:
    surface = MemorySurface()
    yield SurfaceUnderTest(surface, "memory:contract", lambda mid: surface.messages[mid].text)


@asynccontextmanager
async def dashboard_surface() -> AsyncIterator[SurfaceUnderTest]:
    surface = DashboardSurface(Transcript.open(":memory:"))
    yield SurfaceUnderTest(surface, "dashboard:contract", lambda mid: surface.transcript.get("contract", mid).text)


@asynccontextmanager
async def discord_surface() -> AsyncIterator[SurfaceUnderTest]:
    """The real discord.py client, logged in to the fake Discord's REST API."""
    saved = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    fake = await FakeDiscord().start()
    client = RelayClient()
    try:
        use_endpoints(fake.api_base, fake.gateway_url)
        await client.login(fake.token)
        channel = fake.dm(42)
        yield SurfaceUnderTest(DiscordSurface(client), f"discord:{channel}",
                               lambda mid: fake.channels[channel].messages[int(mid)]["content"])
    finally:
        await client.close()
        await fake.close()
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = saved


SURFACE_FACTORIES: list[Callable[[], AbstractAsyncContextManager[SurfaceUnderTest]]] = [
    memory_surface,
    dashboard_surface,
    discord_surface,
]


@pytest.fixture(params=SURFACE_FACTORIES, ids=lambda f: f.__name__)
async def sut(request: pytest.FixtureRequest) -> AsyncIterator[SurfaceUnderTest]:
    async with request.param() as under_test:
        yield under_test


async def test_is_a_surface_with_a_name(sut: SurfaceUnderTest) -> None:
    assert isinstance(sut.surface, Surface)
    assert isinstance(sut.surface.name, str) and sut.surface.name


async def test_capabilities_are_sane(sut: SurfaceUnderTest) -> None:
    caps = sut.surface.capabilities
    assert caps.max_message_length >= 500
    assert caps.length_unit in ("chars", "utf16")
    assert isinstance(caps.markup, str) and caps.markup
    assert caps.edit_interval_s is None or caps.edit_interval_s >= 0


async def test_commands_spell_known_actions(sut: SurfaceUnderTest) -> None:
    commands: Mapping[str, str] = sut.surface.commands
    assert all(isinstance(k, str) and k for k in commands)
    assert set(commands.values()) <= set(ACTIONS)


async def test_render_returns_text(sut: SurfaceUnderTest) -> None:
    for markdown in ("plain words", "**bold** and `code`.", "```py\nx = 1\n```", "😀 done!"):
        assert isinstance(sut.surface.render(markdown), str)


async def test_send_returns_distinct_ids(sut: SurfaceUnderTest) -> None:
    first = await sut.surface.send(sut.conversation_key, "first")
    second = await sut.surface.send(sut.conversation_key, "second")
    assert isinstance(first, str) and first
    assert first != second
    assert sut.read_text(first) == "first"


async def test_edit_changes_the_text(sut: SurfaceUnderTest) -> None:
    if not sut.surface.capabilities.can_edit:
        pytest.skip("surface cannot edit")
    mid = await sut.surface.send(sut.conversation_key, "before")
    await sut.surface.edit(sut.conversation_key, mid, "after")
    assert sut.read_text(mid) == "after"


async def test_identical_edit_is_fine_or_not_modified(sut: SurfaceUnderTest) -> None:
    if not sut.surface.capabilities.can_edit:
        pytest.skip("surface cannot edit")
    mid = await sut.surface.send(sut.conversation_key, "same")
    try:
        await sut.surface.edit(sut.conversation_key, mid, "same")
    except NotModified:
        pass


async def test_buttons_and_plain_text_are_accepted(sut: SurfaceUnderTest) -> None:
    buttons = (Button("Allow once", "tok-1", "primary"), Button("Deny", "tok-2", "danger"))
    if sut.surface.capabilities.can_buttons:
        assert await sut.surface.send(sut.conversation_key, "Allow?", buttons=buttons)
    mid = await sut.surface.send(sut.conversation_key, "2 * 3 = 6_", plain=True)
    assert sut.read_text(mid) == "2 * 3 = 6_"


async def test_over_limit_text_raises_message_too_long(sut: SurfaceUnderTest) -> None:
    too_long = "x" * (sut.surface.capabilities.max_message_length + 1)
    with pytest.raises(MessageTooLong):
        await sut.surface.send(sut.conversation_key, too_long)


async def test_platform_failures_are_the_core_delivery_errors(sut: SurfaceUnderTest) -> None:
    if not sut.surface.capabilities.can_edit:
        pytest.skip("surface cannot edit")
    with pytest.raises(DeliveryError):
        await sut.surface.edit(sut.conversation_key, "999999999", "no such message")


async def test_delete_and_typing(sut: SurfaceUnderTest) -> None:
    if sut.surface.capabilities.can_delete:
        mid = await sut.surface.send(sut.conversation_key, "to delete")
        await sut.surface.delete(sut.conversation_key, mid)
    await sut.surface.typing(sut.conversation_key, True)
    await sut.surface.typing(sut.conversation_key, False)
