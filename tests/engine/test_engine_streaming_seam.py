"""Streaming as chat platforms need it: native streams per conversation, one pace per chat, replies
that continue below an approval prompt, and long turns that roll over to a new message."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from fakes.memory_surface import FakeClock, MemoryMessage, MemorySurface

from core.engine import wording
from core.engine.delivery import Outbox
from core.engine.surface import Capabilities, DeliveryFailed, RateLimit
from core.engine.tasks import TaskSet
from core.store import Store
from tests.engine.conftest import RelayFactory, make_surface, until


@dataclass
class ChatSurface(MemorySurface):
    """Telegram-like: conversations under ``memory:dm`` stream natively, the others send and edit;
    topics ``memory:group:<topic>`` share their group's pace."""

    clock: FakeClock | None = None
    at: list[tuple[float, str]] = field(default_factory=list)

    def capabilities_for(self, conversation_key: str, origin: object | None = None) -> Capabilities:
        return replace(self.capabilities, can_stream_natively=conversation_key.startswith("memory:dm"))

    def rate_key(self, conversation_key: str) -> str:
        return conversation_key.rsplit(":", 1)[0] if conversation_key.startswith("memory:group") else conversation_key

    def _check(self, method: str, message: MemoryMessage) -> None:
        if self.clock is not None:
            self.at.append((self.clock.now, method))
        super()._check(method, message)


def chat_surface(**kw: Any) -> ChatSurface:
    return ChatSurface(capabilities=make_surface(**kw).capabilities)


async def test_a_private_chat_streams_natively_and_ends_with_an_ordinary_message(relay: RelayFactory) -> None:
    surface = chat_surface()
    r = await relay(surface=surface)
    msg = await r.send("text Hello\nsleep 0.1\ntext  world\nsleep 0.1\ntext , and more.", key="memory:dm1")
    await r.idle("memory:dm1")
    (stream,) = surface.streams.values()
    assert len(stream.texts) >= 2 and stream.texts == sorted(stream.texts, key=len), "the preview grew"
    assert stream.ended, "the preview was ended"
    assert surface.count("edit") == 0, "no message edited again and again"
    (final,) = r.messages("memory:dm1")
    assert final.reply_to == msg.message_id and final.text.startswith("Hello world, and more.")
    assert "⏱" in final.text, "the final state is an ordinary message, posted once"


async def test_a_group_in_the_same_relay_sends_and_edits(relay: RelayFactory) -> None:
    surface = chat_surface()
    r = await relay(surface=surface)
    await r.ask("text Hello\nsleep 0.1\ntext  world", key="memory:group:1")
    assert not surface.streams, "no native stream where the conversation cannot have one"
    assert surface.count("edit") >= 1


async def test_a_stream_that_becomes_a_message_is_finished_in_place(relay: RelayFactory) -> None:
    surface = chat_surface()
    surface.stream_kind = "message"  # Slack: a stopped stream is the message
    r = await relay(surface=surface)
    await r.ask("text Hello\nsleep 0.1\ntext  world", key="memory:dm1")
    (final,) = r.messages("memory:dm1")
    assert final.text.startswith("Hello world") and "⏱" in final.text
    assert surface.count("send") == 0, "nothing was posted besides the stream"


async def test_a_failing_native_stream_falls_back_to_send_and_edit_and_loses_nothing(relay: RelayFactory) -> None:
    surface = chat_surface()
    surface.fail_next("stream", DeliveryFailed("draft rejected"), times=10)
    r = await relay(surface=surface)
    await r.ask("text Hello\nsleep 0.1\ntext  world\nsleep 0.1\ntext  again", key="memory:dm1")
    texts = [m.text for m in r.messages("memory:dm1")]
    assert len(texts) == 1 and texts[0].startswith("Hello world again"), texts


async def test_after_an_approval_the_answer_continues_below_the_prompt(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("text Let me look.\ntool t1 execute ls\npermission t1\ntext Here is what I found.")
    await until(lambda: [m for m in r.messages() if m.buttons], what="the approval prompt")
    prompt = next(m for m in r.messages() if m.buttons)
    above = r.reply_to(msg)
    assert int(above.message_id) < int(prompt.message_id)
    assert "Let me look." in above.text, "what was written before the prompt is shown above it"
    await r.press(prompt.buttons[0].token)
    await r.idle()
    ordered = sorted(r.messages(), key=lambda m: int(m.message_id))
    texts = [m.text for m in ordered]
    found = next(i for i, t in enumerate(texts) if "Here is what I found." in t)
    assert ordered[found].message_id > prompt.message_id and found == len(texts) - 1, texts
    assert "Here is what I found." not in above.text, "nothing is written into the message above the prompt"
    assert "⏱" in texts[-1] and "⏱" not in above.text, "the footer closes the answer at the bottom"


async def test_a_stopped_answer_shows_the_partial_text_first_and_the_mark_after(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("text half of the answer\nhang")
    await until(lambda: r.replies_to(msg) and "half" in r.reply_to(msg).text, what="the partial answer")
    await r.send("/stop")
    await r.idle()
    text = r.answer(msg)
    assert text.index("half of the answer") < text.index(wording.STOPPED) < text.index("⏱"), text


async def test_a_long_turn_continues_in_a_new_message_instead_of_editing_an_old_one(relay: RelayFactory) -> None:
    surface = make_surface(rollover_after_s=0.2)
    r = await relay(surface=surface)
    msg = await r.send("text The first part.\nsleep 0.6\ntext The second part.")
    await r.idle()
    parts = r.answer_messages(msg)
    assert len(parts) == 2, [p.text for p in parts]
    assert parts[0].text == "The first part.", "the old message is left as it was"
    assert parts[1].text.startswith("The second part.") and "⏱" in parts[1].text


async def test_a_turn_that_ends_after_a_long_silence_keeps_its_footer_with_its_text(relay: RelayFactory) -> None:
    surface = make_surface(rollover_after_s=0.2)
    r = await relay(surface=surface)
    msg = await r.send("text The only part.\nsleep 0.6")
    await r.idle()
    (only,) = r.answer_messages(msg)
    assert only.text.startswith("The only part.") and "⏱" in only.text, "no message holding a footer alone"


async def test_every_call_into_one_chat_shares_its_pace_across_streams_and_notices(tmp_path: Any) -> None:
    clock = FakeClock()
    surface = chat_surface(rate_limit=RateLimit(1, 1.0))
    surface.clock = clock
    with Store.open(tmp_path / "relay.db") as store:
        tasks = TaskSet()
        outbox = Outbox(store, tasks, {surface.name: surface}, default_interval_s=0.1, sleep=clock.sleep,
                        clock=clock.monotonic)

        async def reply(topic: str) -> None:
            async with outbox.streamer(surface, f"memory:group:{topic}") as streamer:
                text = ""
                for i in range(5):
                    text += f"word{i} "
                    streamer.update(text)
                    await clock.sleep(0.3)
                await outbox.say(surface, f"memory:group:{topic}", f"a notice in topic {topic}")
                await outbox.deliver(streamer, text)

        await clock.run(asyncio.gather(reply("1"), reply("2")))
        await tasks.close()
    times = [t for t, _ in surface.at]
    assert len(times) >= 6
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 1.0, f"two topics of one group never call faster than the group's pace: {surface.at}"
