"""Fixtures of the engine tier: a real Engine on a MemorySurface driving the scripted agent.

``relay(...)`` builds an engine the way ``acp-relay run`` does (a ``core.lifecycle.Lifecycle`` on a
file-backed store) with the fake agent run as a real subprocess that records every frame it receives
(``--record``) and keeps its sessions in a state directory (``--state-dir``), so a restarted relay
(``await r.restart()``: new Engine, new pool, same store file) can ``session/load`` them.

Nothing here measures time: tests poll for a condition with ``until`` and use generous timeouts
only as hang guards.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.config import RelayConfig
from core.engine.conversation import Conversation
from core.engine.engine import Engine
from core.engine.surface import (
    Button,
    ButtonPress,
    Capabilities,
    DeliveryFailed,
    InboundMessage,
    PressResult,
    Rendered,
)
from core.lifecycle import Lifecycle
from core.plugin import SurfaceSettings
from core.store import Store
from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.memory_surface import MemorySurface, StoredMessage, attaching, text_of
from tests.waiting import fast_sleep, until

KEY = "memory:c1"
USER = "u1"




def read_frames(path: Path) -> list[dict[str, Any]]:
    """The frames the fake agent received (its ``--record`` file), oldest first."""
    if not path.exists():
        return []
    frames = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                frames.append(json.loads(line))
            except ValueError:
                continue  # a line still being written
    return frames


def prompt_text(frame: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in frame["params"]["prompt"] if b.get("type") == "text")


class ObservingSurface(MemorySurface):
    """A MemorySurface that calls ``observers`` on every send and edit (before it is applied), and
    can be switched ``down`` (every send and edit fails) or made to refuse certain texts."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.observers: list[Callable[[str, str, str], None]] = []
        self.down = False
        self.refuse: Callable[[str], bool] = lambda text: False

    def _gate(self, method: str, key: str, text: str) -> None:
        for observe in self.observers:
            observe(method, key, text)
        if self.down or self.refuse(text):
            self.calls.append((method, key, text))
            raise DeliveryFailed("the platform is unavailable")

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        self._gate("send", conversation_key, text_of(message))
        return await super().send(conversation_key, message, buttons=buttons, reply_to=reply_to)

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        self._gate("edit", conversation_key, text_of(message))
        await super().edit(conversation_key, message_id, message, buttons=buttons)


def make_surface(**caps: Any) -> ObservingSurface:
    """Telegram-like limits by default, fast edits; ``caps`` override Capabilities fields."""
    base: dict[str, Any] = {"max_message_length": 4096, "length_unit": "utf16", "edit_interval_s": 0.02}
    base.update(caps)
    return ObservingSurface(capabilities=Capabilities(**base))


@dataclass
class Relay:
    """One relay under test: store file, engine, surface and the fake agent's files."""

    tmp: Path
    surface: ObservingSurface
    flags: tuple[str, ...] = ()
    overrides: dict[str, Any] = field(default_factory=dict)
    allowed: tuple[str, ...] = (USER,)
    state_dir: Path | None = None
    cancel_wait_s: float = 5.0
    agent_env: dict[str, str] = field(default_factory=dict)
    engine: Engine = field(init=False)
    store: Store = field(init=False)
    lifecycle: Lifecycle = field(init=False)
    _ids: int = 0
    closed: bool = field(init=False, default=True)

    def __post_init__(self) -> None:
        self.workdir = self.tmp / "work"
        self.workdir.mkdir(exist_ok=True)
        self.record = self.tmp / "record.jsonl"
        self.db = self.tmp / "relay.db"
        if self.state_dir is None:
            self.state_dir = self.tmp / "agent-state"

    def config(self) -> RelayConfig:
        args = [str(FAKE_AGENT_PATH), "--record", str(self.record), "--state-dir", str(self.state_dir),
                *self.flags]
        data: dict[str, Any] = {
            "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(self.workdir),
                                "env": self.agent_env}},
            "store": {"path": str(self.db)},
            "retry": {"attempts": 3, "budget_s": 10, "base_delay_s": 0.05},
            "timeouts": {"prompt_s": 60, "request_s": 10},
            "engine": {"edit_interval_s": 0.02},
        }
        for section, values in self.overrides.items():  # agents={"fake": {"tool_gate": "allow"}} merges too
            target = data.setdefault(section, {})
            for key, value in values.items():
                both = isinstance(value, dict) and isinstance(target.get(key), dict)
                target[key] = {**target[key], **value} if both else value
        return RelayConfig.model_validate(data)

    def open_store(self) -> Store:
        """The store this relay's engine runs on: the SQLite file (a subclass may open another)."""
        return Store.open(self.db)

    async def build(self) -> Relay:
        """A new engine on the store file, attached to the surface, not started yet."""
        self.store = self.open_store()
        self.closed = False
        self.lifecycle = Lifecycle(self.config(), self.store, sleep=fast_sleep, cancel_wait_s=self.cancel_wait_s)
        self.engine = self.lifecycle.engine
        await self.lifecycle.launch(self.surface.name, attaching(self.surface, self.allowed),
                                    settings=SurfaceSettings(enabled=True))
        return self

    async def start(self) -> Relay:
        await (await self.build()).lifecycle.start()
        return self

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        await self.lifecycle.close()

    async def restart(self, *, state_dir: Path | None = None, flags: Sequence[str] | None = None) -> None:
        """Stop this relay and start a new one on the same store file (the surface keeps its
        messages, like a platform does)."""
        await self.close()
        if state_dir is not None:
            self.state_dir = state_dir
        if flags is not None:
            self.flags = tuple(flags)
        await self.start()

    # -- driving ---------------------------------------------------------------------------

    def message(self, text: str, *, message_id: str | None = None, user: str = USER,
                key: str = KEY, edits: str | None = None, deleted: bool = False) -> InboundMessage:
        """``edits``: the id of the message this is an edit of (its new words), or its deletion."""
        if message_id is None:
            self._ids += 1
            message_id = f"m{self._ids}"
        return InboundMessage(self.surface.name, key, user, text, message_id, edits=edits, deleted=deleted)

    async def send(self, text: str, **kw: Any) -> InboundMessage:
        msg = self.message(text, **kw)
        await self.engine.handle_message(msg)
        return msg

    async def ask(self, text: str, *, key: str = KEY, **kw: Any) -> StoredMessage:
        """Send a prompt, wait until the conversation is idle; returns the reply message."""
        msg = await self.send(text, key=key, **kw)
        await self.idle(key)
        return self.reply_to(msg)

    async def press(self, token: str, *, user: str = USER, key: str = KEY) -> PressResult:
        return await self.engine.handle_button(ButtonPress(self.surface.name, key, user, token))

    def conv(self, key: str = KEY) -> Conversation:
        return self.engine.conversations[key]

    def is_idle(self, key: str = KEY) -> bool:
        conv = self.engine.conversations.get(key)
        return conv is None or (not conv.busy and not conv.queue and (conv.worker is None or conv.worker.done()))

    async def idle(self, key: str = KEY) -> None:
        await until(lambda: self.is_idle(key), what=f"{key} idle")

    # -- looking -------------------------------------------------------------------------

    def messages(self, key: str = KEY) -> list[StoredMessage]:
        return [m for m in self.surface.messages.values() if m.conversation_key == key]

    def texts(self, key: str = KEY) -> list[str]:
        return [m.text for m in self.messages(key)]

    def replies_to(self, msg: InboundMessage) -> list[StoredMessage]:
        """Messages posted in reply to ``msg``: its answer first, then any direct replies (notices)."""
        found = [m for m in self.messages(msg.conversation_key) if m.reply_to == msg.message_id]
        return sorted(found, key=lambda m: m.origin is not None)

    def reply_to(self, msg: InboundMessage) -> StoredMessage:
        """The first message of ``msg``'s answer (or, for a command, its reply)."""
        found = self.replies_to(msg)
        assert found, f"no reply to {msg.message_id}: {self.texts(msg.conversation_key)}"
        return found[0]

    def answer_messages(self, msg: InboundMessage) -> list[StoredMessage]:
        """Every message of ``msg``'s answer, in order: it starts with the reply to ``msg`` and goes on
        below approval prompts (and notices that answer other messages) until another answer begins."""
        first = self.reply_to(msg)
        ordered = sorted(self.messages(msg.conversation_key), key=lambda m: int(m.message_id))
        out: list[StoredMessage] = []
        for m in ordered[ordered.index(first):]:
            if m.origin is not None or m.buttons or m.text.startswith("The agent wants to run"):
                continue  # a command's reply, a queued notice, an approval prompt
            if m.reply_to is not None and m.reply_to != msg.message_id:
                break  # the answer to another message
            out.append(m)
        return out

    def answer(self, msg: InboundMessage) -> str:
        """The whole text of ``msg``'s answer, across the messages it continues in."""
        return "\n\n".join(m.text for m in self.answer_messages(msg))

    def with_text(self, fragment: str, key: str = KEY) -> list[StoredMessage]:
        return [m for m in self.messages(key) if fragment in m.text]

    def frames(self) -> list[dict[str, Any]]:
        return read_frames(self.record)

    def methods(self) -> list[str]:
        return [f["method"] for f in self.frames() if "method" in f]

    def prompts(self) -> list[str]:
        return [prompt_text(f) for f in self.frames() if f.get("method") == "session/prompt"]

    def session_id(self, key: str = KEY) -> str | None:
        rec = self.store.get_conversation(key)
        return rec.session_id if rec is not None else None


RelayFactory = Callable[..., Awaitable[Relay]]


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[RelayFactory]:
    """``await relay("--models", "a,b", surface=make_surface(can_buttons=False), engine={...})``.

    Keyword arguments other than ``surface``, ``allowed``, ``state_dir``, ``cancel_wait_s`` and ``agent_env``
    (the fake agent's ``env``) are config sections merged over the test defaults (``retry``, ``timeouts``, ``engine``).
    """
    made: list[Relay] = []

    async def build(*flags: str, surface: ObservingSurface | None = None, allowed: Sequence[str] = (USER,),
                    state_dir: Path | None = None, cancel_wait_s: float = 5.0, agent_env: dict[str, str] | None = None,
                    **sections: dict[str, Any]) -> Relay:
        base = tmp_path / f"relay{len(made)}"
        base.mkdir()
        r = Relay(base, surface or make_surface(), tuple(flags), dict(sections), tuple(allowed), state_dir,
                  cancel_wait_s, dict(agent_env or {}))
        made.append(r)
        return await r.start()

    yield build
    for r in made:
        await r.close()
