"""A Telegram group's answer is edited once per pace interval, counted on virtual time.

A group takes about 20 messages a minute (edits included): the streamer edits the answer every 3 s
and the pacer holds the chat to that pace. Each call here takes a virtual second (a busy relay, a
slow Bot API): the interval runs from one call's start to the next, so the call's own time does not
stretch it, and the text shown is never more than one interval behind the answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from core.engine.pacing import Pacer
from core.engine.streamer import Streamer
from core.engine.surface import Button, Rendered
from surfaces.telegram.keys import GROUP
from tests.fakes.memory_surface import FakeClock, MemorySurface

KEY = "memory:-100123"
CALL_S = 1.0  # virtual time each platform call takes
ANSWER_S = 60.0  # the agent streams for this long
CHUNK_EVERY_S = 0.5


@dataclass
class SlowSurface(MemorySurface):
    """The in-memory surface, each send and edit taking ``call_s`` of virtual time."""

    clock: FakeClock = field(default_factory=FakeClock)
    call_s: float = CALL_S
    starts: list[float] = field(default_factory=list)  # virtual time each text call started

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        self.starts.append(self.clock.now)
        await self.clock.sleep(self.call_s)
        return await super().send(conversation_key, message, buttons=buttons, reply_to=reply_to)

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        self.starts.append(self.clock.now)
        await self.clock.sleep(self.call_s)
        await super().edit(conversation_key, message_id, message, buttons=buttons)


async def streamed(surface: SlowSurface) -> list[str]:
    """An answer streaming for ``ANSWER_S`` (a chunk every ``CHUNK_EVERY_S``), finished with its last chunk."""
    clock = surface.clock
    pacer = Pacer(sleep=clock.sleep, clock=clock.monotonic)
    streamer = Streamer(surface, KEY, sleep=clock.sleep, clock=clock.monotonic, pacer=pacer)

    async def answer() -> list[str]:
        text = ""
        async with streamer:
            for i in range(int(ANSWER_S / CHUNK_EVERY_S)):
                if i:
                    await clock.sleep(CHUNK_EVERY_S)
                text += f"w{i} "
                streamer.update(text)
            return await streamer.finish(text + "done")  # the turn ends with its last chunk

    return await clock.run(answer())


def per_window(starts: list[float], every_s: float) -> list[int]:
    """Calls started in each ``every_s`` of the answer."""
    windows = range(math.ceil(ANSWER_S / every_s))
    return [sum(1 for t in starts if w * every_s <= t < (w + 1) * every_s) for w in windows]


async def test_a_group_answer_is_edited_once_per_interval_whatever_each_call_takes() -> None:
    surface = SlowSurface(capabilities=GROUP)
    interval = GROUP.edit_interval_s
    assert interval == 3.0  # Telegram's 20 a minute
    ids = await streamed(surface)
    windows = math.ceil(ANSWER_S / interval)
    *streaming, final = surface.starts
    assert per_window(streaming, interval) == [1] * windows  # one call every interval, none skipped, none doubled
    assert len(surface.starts) == windows + 1  # 20 while it streams, and the final state: Telegram's 20 + 1
    assert final == ANSWER_S - CHUNK_EVERY_S  # the final state goes as the turn ends
    assert surface.messages[ids[-1]].text.endswith("done")


async def test_a_chat_whose_calls_are_slower_than_the_interval_is_not_edited_back_to_back() -> None:
    # A loaded platform (or a relay in a burst): each call takes 2 s against an interval of 1 s. Each
    # flush then waits as long as a call took, at most an interval: one start every 3 s, not every 2 s.
    surface = SlowSurface(capabilities=replace(GROUP, edit_interval_s=1.0, rate_limit=None), call_s=2.0)
    await streamed(surface)
    *streaming, _final = surface.starts
    assert per_window(streaming, 3.0) == [1] * math.ceil(ANSWER_S / 3.0)
