"""Fixtures of the ACP tier: the fake agent with a --record file, started runtimes, event sinks.

Every spec made with ``agent(...)`` records the frames our client sends; at teardown each record
file is validated against the official ACP schema, so every test doubles as a schema test.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.acp.runtime import AcpRuntime
from core.acp.spec import AgentSpec
from core.acp.types import AcpEvent, TextChunk
from tests.fakes.acp_schema import validate_record_file

HANG_GUARD_S = 15.0  # only ever hit when something hangs


class Events:
    """An ``on_event`` sink that can also be awaited for a particular event."""

    def __init__(self) -> None:
        self.items: list[AcpEvent] = []
        self._changed = asyncio.Event()

    def __call__(self, event: AcpEvent) -> None:
        self.items.append(event)
        self._changed.set()

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.items if isinstance(e, kind)]

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.of(TextChunk))

    async def wait_for(self, pred: Callable[[AcpEvent], bool], timeout: float = HANG_GUARD_S) -> AcpEvent:
        async with asyncio.timeout(timeout):
            while True:
                for event in self.items:
                    if pred(event):
                        return event
                self._changed.clear()
                await self._changed.wait()

    async def wait_text(self, fragment: str, timeout: float = HANG_GUARD_S) -> None:
        await self.wait_for(lambda e: isinstance(e, TextChunk) and fragment in e.text, timeout)


class Recorder:
    """The --record files of the specs built in one test."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.paths: list[Path] = []
        self._n = itertools.count()

    def new_path(self) -> Path:
        path = self.base / f"record-{next(self._n)}.jsonl"
        self.paths.append(path)
        return path

    def frames(self, index: int = -1) -> list[dict[str, Any]]:
        path = self.paths[index]
        return validate_record_file(path) if path.exists() else []

    def methods(self, index: int = -1) -> list[str]:
        return [f["method"] for f in self.frames(index) if "method" in f]

    async def wait_frame(self, pred: Callable[[dict[str, Any]], bool], index: int = -1,
                         timeout: float = HANG_GUARD_S) -> dict[str, Any]:
        """The agent records a frame when it reads it: poll for one that may still be in flight."""
        async with asyncio.timeout(timeout):
            while True:
                for frame in self.frames(index):
                    if pred(frame):
                        return frame
                await asyncio.sleep(0.01)


@pytest.fixture
def events() -> Callable[[], Events]:
    return Events


@pytest.fixture
def recorder(tmp_path: Path) -> Recorder:
    records = tmp_path / "records"
    records.mkdir()
    return Recorder(records)


@pytest.fixture
def agent(fake_agent_spec: Callable[..., AgentSpec], recorder: Recorder) -> Iterator[Callable[..., AgentSpec]]:
    """Like ``fake_agent_spec`` plus ``--record``; every record file is schema-checked at teardown."""

    def build(*flags: str, record: bool = True, **kw: Any) -> AgentSpec:
        if record:
            flags = (*flags, "--record", str(recorder.new_path()))
        return fake_agent_spec(*flags, **kw)

    yield build
    for path in recorder.paths:
        if path.exists():
            validate_record_file(path)


@pytest.fixture
async def start() -> AsyncIterator[Callable[..., Any]]:
    """``rt = await start(spec, request_timeout_s=...)``; every runtime is closed at teardown."""
    started: list[AcpRuntime] = []

    async def run(spec: AgentSpec, **kw: Any) -> AcpRuntime:
        async with asyncio.timeout(HANG_GUARD_S):
            runtime = await AcpRuntime.start(spec, **kw)
        started.append(runtime)
        return runtime

    yield run
    for runtime in started:
        async with asyncio.timeout(HANG_GUARD_S):
            await runtime.close()
