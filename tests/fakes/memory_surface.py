"""An in-memory ``Surface`` with a platform's habits, and a virtual clock for timing without waiting.

``MemorySurface`` keeps every message (id -> text, rendered text, buttons, plain flag), logs every
call, and behaves like a strict platform (Telegram MarkdownV2 is the model):

* its formatter (``MemoryFormatter``) shows blocks as their neutral Markdown (``MemoryMessage.markdown``,
  what tests read as the text "as sent") and renders that by escaping ``.`` and ``!`` as ``\\.`` and
  ``\\!`` (``render``), so the rendered text is longer than the neutral Markdown (splitting must
  measure after rendering); the blocks themselves are kept too (``StoredMessage.blocks``);
* a send or edit whose rendered text (the text itself when ``plain``) measures over
  ``capabilities.max_message_length`` in ``capabilities.length_unit`` raises ``MessageTooLong``;
* markup rule (not for ``plain``): outside fenced and inline code, an odd number of unescaped
  runs of ``*`` (``**`` is one run) or of ``_``, or an odd number of fence lines, raises
  ``MarkupRejected``;
* an edit that changes nothing (same rendered text, buttons, plain flag) raises ``NotModified``;
  an edit or delete of an unknown message raises ``DeliveryFailed``;
* ``fail_next(method, error)`` queues one-shot errors (checked before anything else);
* native streams (when ``capabilities.can_stream_natively``): ``stream_kind`` "preview" behaves
  like a Telegram draft (ending it leaves nothing, the core sends the final text), "message" like a
  Slack stream (ending it leaves an ordinary message showing the final text); ``streams`` keeps
  each stream's texts in order, and a stream must only grow while it is open;
* ``reply`` records the inbound message it answers (``StoredMessage.origin``) and ``private``;
  ``origins`` records the origin handed back with every reply, stream and typing call;
* ``send_file`` keeps the file (``files``: message id -> (name, data)) and posts its caption.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import re
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from core.engine.blocks import Block, Part, Rendered, Text, markdown_of, rendered_as
from core.engine.surface import (
    Button,
    ButtonPress,
    Capabilities,
    DeliveryError,
    DeliveryFailed,
    InboundMessage,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    StartupError,
    Surface,
    SurfaceDefaults,
    measure,
)
from core.plugin import Host

__all__ = ["DEFAULT_COMMANDS", "Attached", "FakeClock", "MemoryFormatter", "MemoryMessage", "MemorySurface",
           "StoredMessage", "attaching", "text_of"]

T = TypeVar("T")

DEFAULT_COMMANDS: Mapping[str, str] = {
    "/new": "reset", "/compact": "compact", "/stop": "stop", "/status": "status",
    "/model": "model", "/help": "help", "/start": "help", "/sessions": "sessions", "/project": "project",
    "/agent": "agent", "/mode": "mode", "/steer": "steer",
}
_FENCE_LINE = re.compile(r"(?m)^ {0,3}(?:`{3,}|~{3,}).*$")
_FENCED = re.compile(r"(?ms)^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[ \t]*$")
_INLINE_CODE = re.compile(r"(`+)[^`]+?\1")


@dataclass(slots=True)
class StoredMessage:
    message_id: str
    conversation_key: str
    text: str  # as the core sent it (neutral Markdown, or plain text)
    rendered: str  # what the platform shows
    buttons: tuple[Button, ...] = ()
    plain: bool = False
    reply_to: str | None = None
    edits: int = 0
    origin: str | None = None  # the inbound message id a ``reply`` answered
    private: bool = False
    blocks: Part = ()  # the blocks the core had the formatter render


@dataclass(slots=True)
class MemoryMessage:
    """What ``MemoryFormatter`` renders: the neutral Markdown, the escaped text, and its length."""

    markdown: str
    rendered: str
    plain: bool
    length: int
    blocks: Part = ()


@dataclass(frozen=True, slots=True)
class MemoryFormatter:
    """The memory surface's one formatter (reads its capabilities' length unit when rendering)."""

    surface: MemorySurface

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> MemoryMessage:
        """Blocks as their neutral Markdown; escaped unless ``plain``; measured in the surface's unit."""
        markdown = markdown_of(blocks)
        rendered = markdown if plain else self.surface.render(markdown)
        return MemoryMessage(markdown, rendered, plain, measure(rendered, self.surface.capabilities.length_unit),
                             blocks if isinstance(blocks, tuple) else tuple(blocks))

    def text(self, markdown: str, *, plain: bool = False) -> MemoryMessage:
        """One ``Text`` block rendered (for tests that post Markdown themselves)."""
        return self.render((Text(markdown),), plain=plain)



def text_of(message: Rendered) -> str:
    """The neutral Markdown of something the memory formatter rendered (what tests read as sent)."""
    return rendered_as(message, MemoryMessage).markdown


def markup_ok(text: str) -> bool:
    """The fake's markup rule (see the module docstring)."""
    if len(_FENCE_LINE.findall(text)) % 2:
        return False
    prose = _INLINE_CODE.sub("", _FENCED.sub("", text))
    prose = re.sub(r"\\.", "", prose)
    return len(re.findall(r"\*+", prose)) % 2 == 0 and len(re.findall(r"_+", prose)) % 2 == 0


@dataclass(slots=True)
class NativeStream:
    """One native stream: every text it showed, and whether it ended."""

    stream_id: str
    conversation_key: str
    reply_to: str | None = None
    texts: list[str] = field(default_factory=list)
    ended: bool = False


@dataclass
class MemorySurface(SurfaceDefaults):
    """A ``Surface`` held in memory. Passes ``isinstance(x, Surface)``.

    ``calls`` logs ``("send", key, text, "plain"|"markup")``, ``("edit", key, id, text,
    "plain"|"markup")``, ``("delete", key, id)`` and ``("typing", key, "True"|"False")``, failed
    calls included.
    """

    name: str = "memory"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(
        max_message_length=4096, length_unit="utf16"))
    commands: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_COMMANDS))
    bot_usernames: frozenset[str] = frozenset()
    stream_kind: str = "preview"
    streams: dict[str, NativeStream] = field(default_factory=dict)
    messages: dict[str, StoredMessage] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    typing_active: dict[str, bool] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    origins: list[tuple[str, object]] = field(default_factory=list)  # (method, origin) handed back
    formatter: MemoryFormatter = field(init=False, repr=False)
    _failures: dict[str, deque[DeliveryError]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _inbound_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.formatter = MemoryFormatter(self)

    def render(self, markdown: str) -> str:
        """Neutral Markdown -> the fake dialect: ``.`` and ``!`` are escaped."""
        return markdown.replace(".", "\\.").replace("!", "\\!")

    def capabilities_for(self, conversation_key: str, origin: object | None = None) -> Capabilities:
        """The same capabilities everywhere (the origin is recorded)."""
        if origin is not None:
            self.origins.append(("capabilities_for", origin))
        return self.capabilities

    def fail_next(self, method: str, error: DeliveryError, times: int = 1) -> None:
        """Make the next ``times`` calls of ``method`` (send, edit, delete, typing) raise ``error``."""
        self._failures.setdefault(method, deque()).extend([error] * times)

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        shown = rendered_as(message, MemoryMessage)
        text, plain = shown.markdown, shown.plain
        self.calls.append(("send", conversation_key, text, "plain" if plain else "markup"))
        self._check("send", shown)
        message_id = str(next(self._ids))
        self.messages[message_id] = StoredMessage(message_id, conversation_key, text, shown.rendered, buttons,
                                                  plain, reply_to, blocks=shown.blocks)
        return message_id

    async def reply(self, message: InboundMessage, answer: Rendered, *, buttons: tuple[Button, ...] = (),
                    private: bool = False) -> str:
        self.calls.append(("reply", message.conversation_key, rendered_as(answer, MemoryMessage).markdown,
                           "private" if private else "public"))
        if message.origin is not None:
            self.origins.append(("reply", message.origin))
        mid = await self.send(message.conversation_key, answer, buttons=buttons, reply_to=message.message_id)
        self.messages[mid].origin, self.messages[mid].private = message.message_id, private
        return mid

    async def stream(self, conversation_key: str, stream_id: str | None, message: Rendered, *,
                     reply_to: str | None = None, origin: object | None = None) -> str:
        shown = rendered_as(message, MemoryMessage)
        text = shown.markdown
        self.calls.append(("stream", conversation_key, text, stream_id or "new"))
        if origin is not None:
            self.origins.append(("stream", origin))
        self._check("stream", shown)
        if stream_id is None:
            stream_id = f"s{next(self._ids)}"
            self.streams[stream_id] = NativeStream(stream_id, conversation_key, reply_to)
        live = self.streams[stream_id]
        if live.ended or (self.stream_kind == "message" and live.texts and not text.startswith(live.texts[-1])):
            raise DeliveryFailed("message_not_in_streaming_state" if live.ended else "a stream only appends")
        live.texts.append(text)
        return stream_id

    async def end_stream(self, conversation_key: str, stream_id: str, message: Rendered) -> str | None:
        shown = rendered_as(message, MemoryMessage)
        self.calls.append(("end_stream", conversation_key, shown.markdown, stream_id))
        self._raise_injected("end_stream")
        live = self.streams[stream_id]
        live.ended = True
        if self.stream_kind != "message":
            return None  # a preview: the core sends the final text
        message_id = str(next(self._ids))
        self.messages[message_id] = StoredMessage(message_id, conversation_key, shown.markdown, shown.rendered,
                                                  reply_to=live.reply_to, blocks=shown.blocks)
        return message_id

    async def send_file(self, conversation_key: str, name: str, data: bytes, *, caption: Rendered,
                        fallback: Rendered, reply_to: str | None = None) -> str:
        self.calls.append(("send_file", conversation_key, name, str(len(data))))
        mid = await self.send(conversation_key, caption, reply_to=reply_to)
        self.files[mid] = (name, data)
        return mid

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        shown = rendered_as(message, MemoryMessage)
        text, plain = shown.markdown, shown.plain
        self.calls.append(("edit", conversation_key, message_id, text, "plain" if plain else "markup"))
        self._check("edit", shown)
        msg = self._find(conversation_key, message_id)
        if (msg.rendered, msg.buttons, msg.plain) == (shown.rendered, buttons, plain):
            raise NotModified("message is not modified")
        msg.text, msg.rendered, msg.buttons, msg.plain = text, shown.rendered, buttons, plain
        msg.blocks = shown.blocks
        msg.edits += 1

    async def delete(self, conversation_key: str, message_id: str) -> None:
        self.calls.append(("delete", conversation_key, message_id))
        self._raise_injected("delete")
        self._find(conversation_key, message_id)
        del self.messages[message_id]
        self.deleted.append(message_id)

    async def typing(self, conversation_key: str, active: bool, *, origin: object | None = None) -> None:
        self.calls.append(("typing", conversation_key, str(active)))
        if origin is not None:
            self.origins.append(("typing", origin))
        self._raise_injected("typing")
        self.typing_active[conversation_key] = active

    def _raise_injected(self, method: str) -> None:
        queue = self._failures.get(method)
        if queue:
            raise queue.popleft()

    def _check(self, method: str, message: MemoryMessage) -> None:
        self._raise_injected(method)
        if not message.plain and not markup_ok(message.markdown):
            raise MarkupRejected("can't parse entities")
        if message.length > self.capabilities.max_message_length:
            raise MessageTooLong("message is too long")

    def _find(self, conversation_key: str, message_id: str) -> StoredMessage:
        msg = self.messages.get(message_id)
        if msg is None or msg.conversation_key != conversation_key:
            raise DeliveryFailed("message to edit not found")
        return msg

    # -- helpers for tests -------------------------------------------------------------------

    def count(self, method: str) -> int:
        """How many calls of ``method`` were made (failed ones included)."""
        return sum(1 for c in self.calls if c[0] == method)

    def texts(self, conversation_key: str | None = None) -> list[str]:
        """The current texts (as sent) of the live messages, oldest first."""
        return [m.text for m in self.messages.values()
                if conversation_key is None or m.conversation_key == conversation_key]

    def inbound(self, text: str, *, user_id: str = "42", conversation_key: str = "memory:1",
                message_id: str | None = None, reply_to: str | None = None) -> InboundMessage:
        """A neutral inbound message as this surface would hand it to the core."""
        mid = message_id if message_id is not None else f"in-{next(self._inbound_ids)}"
        return InboundMessage(self.name, conversation_key, user_id, text, mid, reply_to=reply_to)

    def press(self, token: str, *, user_id: str = "42", conversation_key: str = "memory:1",
              message_id: str = "") -> ButtonPress:
        """A neutral button press."""
        return ButtonPress(self.name, conversation_key, user_id, token, message_id)


class Attached:
    """A surface with no platform connection, as a ``Lifecycle`` runs it (nothing to stop or close)."""

    async def stop_receiving(self) -> None:
        pass

    async def fatal(self) -> StartupError:
        await asyncio.get_running_loop().create_future()  # never: no connection to lose
        raise AssertionError("unreachable")

    async def close(self) -> None:
        pass


def attaching(surface: Surface, allowed_user_ids: Collection[str]) -> Callable[[Host, object], Awaitable[Attached]]:
    """A launch for ``Lifecycle.launch``: attach the ready-made ``surface`` to its host."""

    async def launch(host: Host, settings: object) -> Attached:
        host.attach(surface, allowed_user_ids)
        return Attached()

    return launch


class FakeClock:
    """Virtual time: ``sleep`` parks the caller until ``advance``/``run`` moves time past it.

    ``sleeps`` records every requested delay, so tests assert on delays, never on durations.
    """

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    async def sleep(self, delay: float) -> None:
        """The injectable ``sleep``."""
        self.sleeps.append(delay)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (self.now + max(0.0, delay), next(self._seq), fut))
        await fut

    def monotonic(self) -> float:
        """The injectable clock."""
        return self.now

    @staticmethod
    async def settle(rounds: int = 20) -> None:
        """Let every ready task run until it blocks again."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    def _next_deadline(self) -> float | None:
        while self._waiters and self._waiters[0][2].done():
            heapq.heappop(self._waiters)  # a cancelled sleeper
        return self._waiters[0][0] if self._waiters else None

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking each sleeper in deadline order."""
        target = self.now + seconds
        await self.settle()
        while (deadline := self._next_deadline()) is not None and deadline <= target:
            _, _, fut = heapq.heappop(self._waiters)
            self.now = max(self.now, deadline)
            fut.set_result(None)
            await self.settle()
        self.now = max(self.now, target)
        await self.settle()

    async def run(self, awaitable: Awaitable[T], *, limit_s: float = 86_400.0) -> T:
        """Await ``awaitable``, jumping time to the next sleeper whenever everything is blocked."""
        task = asyncio.ensure_future(awaitable)
        start = self.now
        while True:
            await self.settle()
            if task.done():
                return task.result()
            deadline = self._next_deadline()
            if deadline is None or deadline - start > limit_s:
                task.cancel()
                raise RuntimeError("virtual clock: the task is blocked and nothing is sleeping")
            await self.advance(deadline - self.now)
