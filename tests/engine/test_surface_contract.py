"""The Surface protocol contract, run against every surface in ``SURFACE_FACTORIES``.

A factory is an async context manager yielding a ``SurfaceUnderTest``: the surface, a conversation
key it can post to, and ``read(message_id)``, which reads back what the PLATFORM shows for a message
(for surfaces backed by a fake platform server, from the server's state): the text a person reads
(markup gone), and the labels of its buttons; None once the message is gone; and the ``origin`` its
inbound messages come with (what the surface needs back to answer one: a channel stream's asker).
Every case reads back what the surface did.

Every registered surface (``core.loading.registered``: the entry points) must have its factory here,
under its name (a test checks). A surface in a package of its own runs the same cases from a
checkout of acp-relay: ``ACP_RELAY_CONTRACT=its_package.contract:factory pytest
tests/engine/test_surface_contract.py`` adds its factory (see docs/writing-a-surface.md).

What a surface shows, the core hands its ``formatter`` as blocks; the surface delivers what the
formatter rendered (``md`` and ``shown_blocks`` below do what the core does).
"""

from __future__ import annotations

import html
import importlib
import inspect
import json
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from acp_relay_toy.surface import ToySurface
from discord.gateway import DiscordWebSocket
from discord.http import Route
from fakes.discord_api import FakeDiscord, shown_text
from fakes.memory_surface import MemorySurface
from slack_sdk.web.async_client import AsyncWebClient

from core.engine import wording
from core.engine.blocks import (
    Block,
    ErrorProse,
    Footer,
    Notices,
    PartialNote,
    Plan,
    PlanStep,
    RefusalCard,
    StopMark,
    Text,
    ToolLine,
    Tools,
)
from core.engine.router import ACTIONS
from core.engine.splitter import plain_text
from core.engine.surface import (
    Button,
    Capabilities,
    DeliveryError,
    InboundMessage,
    MessageTooLong,
    NotModified,
    Rendered,
    Surface,
)
from core.loading import registered
from surfaces.dashboard.surface import DashboardSurface
from surfaces.dashboard.transcript import Transcript
from surfaces.discord.gateway import RelayClient, use_endpoints
from surfaces.discord.surface import DiscordSurface
from surfaces.slack.keys import Asker, Thread
from surfaces.slack.surface import SlackSurface
from surfaces.telegram.running import build_application
from surfaces.telegram.settings import TelegramConfig
from surfaces.telegram.surface import TelegramSurface
from tests.fakes.slack_api import BOT_TOKEN, SlackFake
from tests.fakes.telegram_api import TOKEN, FakeBotApi


@dataclass(frozen=True)
class Shown:
    """What the platform shows for one message."""

    text: str
    buttons: tuple[str, ...] = ()


@dataclass(frozen=True)
class SurfaceUnderTest:
    surface: Surface
    conversation_key: str
    read: Callable[[str], Shown | None]
    #: Whether the platform shows the typing indicator now; None where it cannot be read back.
    typing: Callable[[], bool] | None = None
    #: The ``origin`` an inbound message in this conversation comes with.
    origin: object | None = None


def md(sut: SurfaceUnderTest, markdown: str, *, plain: bool = False) -> Rendered:
    """What the core hands the surface for ``markdown``: one ``Text`` block, rendered by its formatter."""
    return sut.surface.formatter.render((Text(markdown),), plain=plain)


@asynccontextmanager
async def memory_surface(surface: MemorySurface | None = None) -> AsyncIterator[SurfaceUnderTest]:
    surface = surface or MemorySurface()
    key = "memory:contract"

    def read(mid: str) -> Shown | None:
        msg = surface.messages.get(mid)
        if msg is None:
            return None
        return Shown(msg.text if msg.plain else plain_text(msg.text), tuple(b.label for b in msg.buttons))

    yield SurfaceUnderTest(surface, key, read, lambda: surface.typing_active.get(key, False))


@asynccontextmanager
async def streaming_memory_surface() -> AsyncIterator[SurfaceUnderTest]:
    """A platform whose streams become messages (Slack's kind of native streaming)."""
    caps = Capabilities(max_message_length=4096, length_unit="utf16", can_stream_natively=True)
    async with memory_surface(MemorySurface(capabilities=caps, stream_kind="message")) as under_test:
        yield under_test


@asynccontextmanager
async def dashboard_surface() -> AsyncIterator[SurfaceUnderTest]:
    surface = DashboardSurface(Transcript.open(":memory:"))

    def read(mid: str) -> Shown | None:
        entry = surface.transcript.get("contract", mid)
        if entry is None:
            return None  # the browser renders Markdown: a person reads its text
        text = entry.text if entry.plain else plain_text(entry.text)
        return Shown(text, tuple(b.label for b in entry.buttons))

    yield SurfaceUnderTest(surface, "dashboard:contract", read,
                           lambda: bool(surface.snapshot("contract")["typing"]))


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

        def read(mid: str) -> Shown | None:
            message = fake.channels[channel].messages.get(int(mid)) if mid.isdigit() else None
            if message is None:
                return None
            return Shown(shown_text(message["content"]), tuple(label for label, _ in fake.buttons(message)))

        # typing cannot be read back: Discord shows it for ten seconds and has no way to clear it
        yield SurfaceUnderTest(DiscordSurface(client), f"discord:{channel}", read)
    finally:
        await client.close()
        await fake.close()
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = saved


@asynccontextmanager
async def telegram_surface() -> AsyncIterator[SurfaceUnderTest]:
    """The real PTB bot against the fake Bot API; the text read back is what the chat shows."""
    api = await FakeBotApi().start()
    chat = api.private(4242)
    app = build_application(TOKEN, TelegramConfig(enabled=True, api_base_url=api.url))
    await app.initialize()

    def read(mid: str) -> Shown | None:
        msg = api.messages.get((chat, int(mid)))
        if msg is None:
            return None  # entities carry the formatting: the text is what a person reads
        rows = msg.get("reply_markup", {}).get("inline_keyboard", [])
        return Shown(str(msg["text"]), tuple(b["text"] for row in rows for b in row))

    try:
        # Typing cannot be read back: Telegram has no call that clears it (it ends by itself after
        # 5 s, or at the bot's next message).
        yield SurfaceUnderTest(TelegramSurface(app.bot), f"telegram:{chat}", read)
    finally:
        await app.shutdown()
        await api.close()


@asynccontextmanager
async def slack_surface() -> AsyncIterator[SurfaceUnderTest]:
    channel, thread_ts = "C0CONTRACT", "1700000000.000000"
    async with SlackFake() as fake:
        surface = SlackSurface(AsyncWebClient(token=BOT_TOKEN, base_url=fake.api_url))

        def read(mid: str) -> Shown | None:
            msg = fake.get(channel, mid)
            if msg is None:
                return None
            text = html.unescape(msg.text) if msg.plain else plain_text(msg.shown)
            return Shown(text, tuple(b["text"]["text"] for b in msg.buttons))

        yield SurfaceUnderTest(surface, Thread("T0FAKE", channel, thread_ts).key, read,
                               lambda: bool(fake.status_of(channel, thread_ts)),
                               origin=Asker("U0ALICE"))  # a channel stream is for its asker


@asynccontextmanager
async def toy_surface() -> AsyncIterator[SurfaceUnderTest]:
    """The toy surface of tests/toy_surface (a package of its own): its outbox is what it shows."""
    with tempfile.TemporaryDirectory() as folder:
        surface = ToySurface(Path(folder))

        def read(mid: str) -> Shown | None:
            shown: dict[str, tuple[str, bool]] = {}
            for line in surface.outbox.read_text().splitlines():
                entry = json.loads(line)
                if entry["op"] == "delete":
                    shown.pop(entry["id"], None)
                else:
                    shown[entry["id"]] = (entry["text"], entry["plain"])
            if mid not in shown:
                return None
            text, plain = shown[mid]
            return Shown(text if plain else plain_text(text))  # a person reads the Markdown rendered

        yield SurfaceUnderTest(surface, "toy:contract", read)


Factory = Callable[[], AbstractAsyncContextManager[SurfaceUnderTest]]


def _external() -> dict[str, Factory]:
    """The factory ``ACP_RELAY_CONTRACT`` names (``module:function``), for a surface of another package."""
    named = os.environ.get("ACP_RELAY_CONTRACT", "")
    if not named:
        return {}
    module, _, function = named.partition(":")
    return {named: getattr(importlib.import_module(module), function)}


#: Each registered surface's factory under its name, the core's in-memory fakes, and any external one.
SURFACE_FACTORIES: dict[str, Factory] = {
    "memory": memory_surface,
    "memory-streaming": streaming_memory_surface,
    "dashboard": dashboard_surface,
    "discord": discord_surface,
    "telegram": telegram_surface,
    "slack": slack_surface,
    "toy": toy_surface,
    **_external(),
}

#: The methods of the seam: (name, is a coroutine, keyword-only parameters it must accept).
_METHODS: tuple[tuple[str, bool, frozenset[str]], ...] = (
    ("capabilities_for", False, frozenset()),
    ("rate_key", False, frozenset()),
    ("send", True, frozenset({"buttons", "reply_to"})),
    ("send_once", True, frozenset({"key", "buttons", "reply_to"})),
    ("reply", True, frozenset({"buttons", "private"})),
    ("edit", True, frozenset({"buttons"})),
    ("delete", True, frozenset()),
    ("typing", True, frozenset({"origin"})),
    ("stream", True, frozenset({"reply_to", "origin"})),
    ("end_stream", True, frozenset()),
    ("send_file", True, frozenset({"caption", "fallback", "reply_to"})),
)
#: One block of every kind the core hands a formatter, and words of it a person reads.
_EVERY_BLOCK: tuple[tuple[Block, str], ...] = (
    (Notices(("Retrying (attempt 2 of 3)…",)), "Retrying (attempt 2 of 3)…"),
    (Plan((PlanStep("read the code", "completed"),)), "read the code"),
    (Tools((ToolLine("Read a.py", "read", "completed"),)), "Read a.py (read): done"),
    (Text("The **answer**."), "The answer."),
    (PartialNote(wording.PARTIAL_NOTE), wording.PARTIAL_NOTE),
    (StopMark(), wording.STOPPED),
    (RefusalCard(category="policy"), "Category: policy"),
    (ErrorProse("The conversation no longer fits; start a new conversation.", reset=True), "no longer fits"),
    (Footer(12.3, 45.0), "12.3s · context 45%"),
)


def test_every_registered_surface_runs_the_contract() -> None:
    assert set(registered()) - set(SURFACE_FACTORIES) == set(), "a registered surface has no factory here"
    assert {"dashboard", "discord", "slack", "telegram"} <= set(registered())


@pytest.fixture(params=list(SURFACE_FACTORIES.values()), ids=lambda f: f.__name__)
async def sut(request: pytest.FixtureRequest) -> AsyncIterator[SurfaceUnderTest]:
    async with request.param() as under_test:
        yield under_test


def shown(sut: SurfaceUnderTest, mid: str) -> Shown:
    found = sut.read(mid)
    assert found is not None, f"message {mid} is not shown"
    return found


async def test_is_a_surface_with_every_method_of_the_seam(sut: SurfaceUnderTest) -> None:
    surface = sut.surface
    assert isinstance(surface, Surface)
    assert isinstance(surface.name, str) and surface.name
    assert sut.conversation_key.startswith(f"{surface.name}:"), "keys are surface-qualified"
    for name, is_async, keywords in _METHODS:
        method = getattr(surface, name)
        assert inspect.iscoroutinefunction(method) == is_async, f"{name}: async is {is_async}"
        params = inspect.signature(method).parameters
        missing = {k for k in keywords if k not in params or params[k].kind is not inspect.Parameter.KEYWORD_ONLY}
        assert not missing, f"{name} lacks keyword-only {sorted(missing)}"


async def test_capabilities_are_sane_in_the_conversation(sut: SurfaceUnderTest) -> None:
    for caps in (sut.surface.capabilities, sut.surface.capabilities_for(sut.conversation_key)):
        assert isinstance(caps, Capabilities)
        assert caps.max_message_length >= 500
        assert caps.length_unit in ("chars", "utf16")
        assert caps.edit_interval_s is None or caps.edit_interval_s >= 0
        assert caps.rate_limit is None or (caps.rate_limit.calls > 0 and caps.rate_limit.per_s > 0)
    key = sut.surface.rate_key(sut.conversation_key)
    assert isinstance(key, str) and key


async def test_commands_spell_known_actions(sut: SurfaceUnderTest) -> None:
    commands: Mapping[str, str] = sut.surface.commands
    assert all(isinstance(k, str) and k for k in commands)
    assert set(commands.values()) <= set(ACTIONS)
    assert "compact" in commands.values(), "every surface understands /compact"


@pytest.mark.parametrize(("markdown", "words"), [
    ("plain words", "plain words"),
    ("**bold** and `code`.", "bold and code."),
    ("😀 done!", "😀 done!"),
])
async def test_markdown_is_rendered_so_a_person_reads_the_words_without_markup(
        sut: SurfaceUnderTest, markdown: str, words: str) -> None:
    mid = await sut.surface.send(sut.conversation_key, md(sut, markdown))
    assert shown(sut, mid).text == words


async def test_every_kind_of_block_is_rendered_once_with_its_length_and_shown(sut: SurfaceUnderTest) -> None:
    formatter, limit = sut.surface.formatter, sut.surface.capabilities_for(sut.conversation_key).max_message_length
    every = tuple(block for block, _ in _EVERY_BLOCK)
    rendered = formatter.render(every)
    assert 0 < rendered.length <= limit
    assert all(formatter.render((block,)).length > 0 for block in every)
    mid = await sut.surface.send(sut.conversation_key, rendered)
    text = shown(sut, mid).text
    assert all(words in text for _, words in _EVERY_BLOCK), text


@dataclass(frozen=True, slots=True)
class ComingSoon(Block):
    """A kind no formatter knows yet (the pickers and forms of later issues will be such kinds first)."""

    kind: ClassVar[str] = "coming-soon"
    choices: tuple[str, ...]

    def markdown(self) -> str:
        return "Choose one: " + ", ".join(self.choices)

    def scrubbed(self, scrub: Callable[[str], str]) -> ComingSoon:
        return ComingSoon(tuple(scrub(c) for c in self.choices))

    def to_json(self) -> dict[str, object]:
        return {"type": self.kind, "choices": list(self.choices)}


async def test_a_kind_the_formatter_does_not_know_is_shown_as_its_words(sut: SurfaceUnderTest) -> None:
    rendered = sut.surface.formatter.render((Text("Which one?"), ComingSoon(("alpha", "beta"))))
    mid = await sut.surface.send(sut.conversation_key, rendered)
    assert "Choose one: alpha, beta" in shown(sut, mid).text


async def test_a_code_block_keeps_its_code(sut: SurfaceUnderTest) -> None:
    mid = await sut.surface.send(sut.conversation_key, md(sut, "```py\nx = 1\nprint(x)\n```"))
    assert "x = 1\nprint(x)" in shown(sut, mid).text


async def test_send_returns_distinct_ids_and_the_platform_shows_each_text(sut: SurfaceUnderTest) -> None:
    first = await sut.surface.send(sut.conversation_key, md(sut, "first"))
    second = await sut.surface.send(sut.conversation_key, md(sut, "second"))
    assert isinstance(first, str) and first and first != second
    assert (shown(sut, first).text, shown(sut, second).text) == ("first", "second")


async def test_reply_answers_a_message_and_is_shown(sut: SurfaceUnderTest) -> None:
    asked = InboundMessage(sut.surface.name, sut.conversation_key, "42", "/status", "in-1", origin=sut.origin)
    public = await sut.surface.reply(asked, md(sut, "the answer"))
    private = await sut.surface.reply(asked, md(sut, "only for you"), private=True)
    assert shown(sut, public).text == "the answer"
    assert shown(sut, private).text == "only for you"


async def test_edit_changes_the_text_and_the_buttons(sut: SurfaceUnderTest) -> None:
    caps = sut.surface.capabilities_for(sut.conversation_key)
    if not caps.can_edit:
        pytest.skip("surface cannot edit")
    buttons = (Button("Allow once", "tok-1", "primary"), Button("Deny", "tok-2", "danger"))
    mid = await sut.surface.send(sut.conversation_key, md(sut, "Allow?"), buttons=buttons if caps.can_buttons else ())
    if caps.can_buttons:
        assert shown(sut, mid).buttons == ("Allow once", "Deny")
    await sut.surface.edit(sut.conversation_key, mid, md(sut, "Allowed once."))
    assert shown(sut, mid) == Shown("Allowed once."), "the text changed and the buttons are gone"


async def test_an_identical_edit_changes_nothing(sut: SurfaceUnderTest) -> None:
    if not sut.surface.capabilities_for(sut.conversation_key).can_edit:
        pytest.skip("surface cannot edit")
    mid = await sut.surface.send(sut.conversation_key, md(sut, "same"))
    try:
        await sut.surface.edit(sut.conversation_key, mid, md(sut, "same"))
    except NotModified:
        pass  # the platform says so; either way the message still shows the same text
    assert shown(sut, mid).text == "same"


async def test_plain_text_is_shown_exactly_as_sent(sut: SurfaceUnderTest) -> None:
    text = "2 * 3 = 6_ and a \\ backslash, *not bold*"
    mid = await sut.surface.send(sut.conversation_key, md(sut, text, plain=True))
    assert shown(sut, mid).text == text, "no markup parsed, no escapes added"


async def test_over_limit_text_raises_message_too_long_and_shows_nothing(sut: SurfaceUnderTest) -> None:
    caps = sut.surface.capabilities_for(sut.conversation_key)
    marker = await sut.surface.send(sut.conversation_key, md(sut, "before"))
    too_long = md(sut, "x" * (caps.max_message_length + 1))
    assert too_long.length > caps.max_message_length  # the formatter says so before anything is sent
    with pytest.raises(MessageTooLong):
        await sut.surface.send(sut.conversation_key, too_long)
    after = await sut.surface.send(sut.conversation_key, md(sut, "after"))
    assert shown(sut, marker).text == "before" and shown(sut, after).text == "after"


async def test_platform_failures_are_the_core_delivery_errors(sut: SurfaceUnderTest) -> None:
    if not sut.surface.capabilities_for(sut.conversation_key).can_edit:
        pytest.skip("surface cannot edit")
    with pytest.raises(DeliveryError):
        await sut.surface.edit(sut.conversation_key, "999999999", md(sut, "no such message"))


async def test_delete_removes_the_message(sut: SurfaceUnderTest) -> None:
    if not sut.surface.capabilities_for(sut.conversation_key).can_delete:
        pytest.skip("surface cannot delete")
    keep = await sut.surface.send(sut.conversation_key, md(sut, "keep"))
    gone = await sut.surface.send(sut.conversation_key, md(sut, "to delete"))
    await sut.surface.delete(sut.conversation_key, gone)
    assert sut.read(gone) is None
    assert shown(sut, keep).text == "keep"


async def test_typing_is_shown_and_cleared(sut: SurfaceUnderTest) -> None:
    if not sut.surface.capabilities_for(sut.conversation_key).can_typing:
        pytest.skip("surface has no typing indicator")
    await sut.surface.typing(sut.conversation_key, True, origin=sut.origin)
    if sut.typing is not None:
        assert sut.typing()
    await sut.surface.typing(sut.conversation_key, False, origin=sut.origin)
    if sut.typing is not None:
        assert not sut.typing()


async def test_a_native_stream_ends_with_the_final_text_shown(sut: SurfaceUnderTest) -> None:
    key = sut.conversation_key
    if not sut.surface.capabilities_for(key, sut.origin).can_stream_natively:
        pytest.skip("no native streaming in this conversation")
    stream_id = await sut.surface.stream(key, None, md(sut, "Hello"), origin=sut.origin)
    assert await sut.surface.stream(key, stream_id, md(sut, "Hello world"), origin=sut.origin) == stream_id
    mid = await sut.surface.end_stream(key, stream_id, md(sut, "Hello world, done."))
    if mid is not None:  # the stream became an ordinary message
        assert shown(sut, mid).text == "Hello world, done."
