"""A Telegram group's answer is edited once per pace interval, counted on virtual time.

A group takes about 20 messages a minute (edits included): the streamer edits the answer every 3 s
and the pacer holds the chat to that pace. Each call here takes a virtual second (a busy relay, a
slow Bot API): the interval runs from one call's start to the next, so the call's own time does not
stretch it, and the text shown is never more than one interval behind the answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

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
    """The in-memory surface with Telegram's group capabilities, each send and edit taking ``CALL_S``."""

    clock: FakeClock = field(default_factory=FakeClock)
    starts: list[float] = field(default_factory=list)  # virtual time each text call started

    async def send(self, conversation_key: str, message: Rendered, *, buttons: tuple[Button, ...] = (),
                   reply_to: str | None = None) -> str:
        self.starts.append(self.clock.now)
        await self.clock.sleep(CALL_S)
        return await super().send(conversation_key, message, buttons=buttons, reply_to=reply_to)

    async def edit(self, conversation_key: str, message_id: str, message: Rendered, *,
                   buttons: tuple[Button, ...] = ()) -> None:
        self.starts.append(self.clock.now)
        await self.clock.sleep(CALL_S)
        await super().edit(conversation_key, message_id, message, buttons=buttons)


async def test_a_group_answer_is_edited_once_per_interval_whatever_each_call_takes() -> None:
    surface = SlowSurface(capabilities=GROUP)
    clock = surface.clock
    interval = GROUP.edit_interval_s
    assert interval == 3.0  # Telegram's 20 a minute
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

    ids = await clock.run(answer())
    windows = math.ceil(ANSWER_S / interval)
    *streaming, final = surface.starts
    per_window = [sum(1 for t in streaming if w * interval <= t < (w + 1) * interval) for w in range(windows)]
    assert per_window == [1] * windows  # one call in every interval of the answer, none skipped, none doubled
    assert len(surface.starts) == windows + 1  # 20 while it streams, and the final state: Telegram's 20 + 1
    assert final == ANSWER_S - CHUNK_EVERY_S  # the final state goes as the turn ends
    assert surface.messages[ids[-1]].text.endswith("done")
