"""Streamer against the in-memory surface, on virtual time (delays are recorded, never waited)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import pytest
from fakes.memory_surface import FakeClock, MemoryMessage, MemorySurface

from core.engine.blocks import Block, Footer, Text
from core.engine.streamer import Streamer
from core.engine.surface import (
    Button,
    Capabilities,
    DeliveryFailed,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    RateLimited,
    measure,
)

KEY = "memory:1"


def surface_with(limit: int = 4096, **caps: object) -> MemorySurface:
    return MemorySurface(capabilities=Capabilities(max_message_length=limit, length_unit="utf16", **caps))  # type: ignore[arg-type]


async def stream(surface: MemorySurface, clock: FakeClock, chunks: Sequence[str], *, step: float = 0.01,
                 interval: float = 1.0, final: str | None = None, **kwargs: object) -> list[str]:
    """Feed ``chunks`` one per ``step`` seconds of virtual time, then finish with the whole text."""
    streamer = Streamer(surface, KEY, interval_s=interval, sleep=clock.sleep, clock=clock.monotonic, **kwargs)  # type: ignore[arg-type]

    async def scenario() -> list[str]:
        text = ""
        async with streamer:
            for chunk in chunks:
                text += chunk
                streamer.update(text)
                await clock.sleep(step)
            return await streamer.finish(text if final is None else final)

    return await clock.run(scenario())


def shown(surface: MemorySurface, ids: Sequence[str]) -> list[str]:
    return [surface.messages[i].text for i in ids]


async def test_final_state_is_always_flushed() -> None:
    surface, clock = surface_with(), FakeClock()
    ids = await stream(surface, clock, ["Hel", "lo", ", wor", "ld"], step=0.001)
    assert shown(surface, ids) == ["Hello, world"]


async def test_updates_without_a_started_flusher_are_delivered_by_finish() -> None:
    surface = surface_with()
    streamer = Streamer(surface, KEY)
    streamer.update("draft")
    assert surface.calls == []
    ids = await streamer.finish("final answer")
    assert shown(surface, ids) == ["final answer"]
    assert streamer.calls == 1


async def test_500_updates_are_coalesced_into_about_one_edit_per_interval() -> None:
    surface, clock = surface_with(), FakeClock()
    chunks = [f"w{i} " for i in range(500)]  # 5 s of virtual time at 10 ms per chunk
    ids = await stream(surface, clock, chunks, step=0.01, interval=1.0)
    assert surface.count("send") == 1
    assert 4 <= surface.count("edit") <= 7  # one per second, plus the final state
    assert shown(surface, ids) == ["".join(chunks).rstrip()]


async def test_burst_of_updates_between_ticks_sends_only_the_latest() -> None:
    surface, clock = surface_with(), FakeClock()

    async def scenario() -> list[str]:
        async with Streamer(surface, KEY, interval_s=1.0, sleep=clock.sleep, clock=clock.monotonic) as streamer:
            for i in range(500):
                streamer.update(f"state {i}")
            await clock.sleep(0.5)
            return await streamer.finish("state final")

    ids = await clock.run(scenario())
    assert [c[0] for c in surface.calls] == ["send", "edit"]
    assert surface.calls[0][2] == "state 499"
    assert shown(surface, ids) == ["state final"]


async def test_long_reply_is_split_at_the_limit_without_breaking_fences() -> None:
    surface, clock = surface_with(limit=500), FakeClock()
    code = "".join(f"    print('line {i}.')  # 😀 step {i}.\n" for i in range(60))
    chunks = ["Here is the script.\n\n", "```python\n", *code.splitlines(keepends=True), "```\n\nDone!"]
    ids = await stream(surface, clock, chunks, step=0.05)
    assert len(ids) > 3
    for msg in (surface.messages[i] for i in ids):
        assert measure(msg.rendered, "utf16") <= 500
        assert len(re.findall(r"(?m)^```", msg.text)) % 2 == 0
    lines = [ln for i in ids for ln in surface.messages[i].text.splitlines() if ln.startswith("    print")]
    assert lines == code.splitlines()
    assert all(surface.messages[i].text.startswith("```python\n") for i in ids[1:-1])


async def test_earlier_pieces_are_not_edited_once_the_answer_moved_on() -> None:
    surface, clock = surface_with(limit=200), FakeClock()
    chunks = [f"Sentence number {i} of a long answer.\n" for i in range(40)]
    ids = await stream(surface, clock, chunks, step=0.3)
    send_positions = [n for n, c in enumerate(surface.calls) if c[0] == "send"]
    assert len(send_positions) == len(ids) > 3
    # A message is edited only while it is the last one (growing); once the next exists it is final.
    for k in range(1, len(ids)):
        later_edits = [c for c in surface.calls[send_positions[k]:] if c[0] == "edit" and c[2] == ids[k - 1]]
        assert later_edits == []


async def test_429_while_streaming_waits_retry_after_and_the_final_answer_arrives() -> None:
    surface, clock = surface_with(), FakeClock()
    surface.fail_next("edit", RateLimited(7.0))
    chunks = [f"part {i}. " for i in range(300)]
    ids = await stream(surface, clock, chunks, step=0.01)
    assert 7.0 in clock.sleeps
    assert shown(surface, ids) == ["".join(chunks).rstrip()]


async def test_429_on_the_final_edit_is_honoured_and_resent() -> None:
    surface, clock = surface_with(), FakeClock()
    streamer = Streamer(surface, KEY, sleep=clock.sleep, clock=clock.monotonic)
    first = await streamer.post("thinking…")
    surface.fail_next("edit", RateLimited(3.0))
    await clock.run(streamer.edit_message(first, "the final answer"))
    assert clock.sleeps == [3.0]
    assert clock.now == 3.0
    assert surface.count("edit") == 2
    assert surface.messages[first].text == "the final answer"


async def test_markup_rejected_falls_back_to_plain_text_without_escape_debris() -> None:
    surface = surface_with()
    surface.fail_next("send", MarkupRejected("can't parse entities"))
    ids = await Streamer(surface, KEY).finish("**Done!** Saved to `config.json`.")
    msg = surface.messages[ids[0]]
    assert msg.plain
    assert msg.text == "Done! Saved to config.json."
    assert "\\" not in msg.rendered


async def test_unbalanced_markup_from_the_agent_is_delivered_as_plain_text() -> None:
    surface = surface_with()
    ids = await Streamer(surface, KEY).finish("2 * 3 is 6. Really!")
    msg = surface.messages[ids[0]]
    assert msg.plain and msg.rendered == "2 * 3 is 6. Really!"


async def test_markup_rejected_mid_stream_is_retried_as_markup_at_the_end() -> None:
    surface, clock = surface_with(), FakeClock()
    ids = await stream(surface, clock, ["The answer is ", "**bold", "** and done."], step=1.5)
    msg = surface.messages[ids[0]]
    assert not msg.plain and msg.text == "The answer is **bold** and done."
    assert ("edit", KEY, ids[0], "The answer is **bold", "plain") in surface.calls  # mid-stream fallback


async def test_not_modified_is_not_an_error() -> None:
    surface = surface_with()
    streamer = Streamer(surface, KEY)
    mid = await streamer.post("same")
    surface.fail_next("edit", NotModified("message is not modified"))
    assert await streamer.edit_message(mid, "other") == mid
    assert surface.count("edit") == 1
    await streamer.edit_message(mid, "same")  # the fake itself raises NotModified here
    assert surface.messages[mid].text == "same"


async def test_message_too_long_from_the_platform_re_splits_smaller() -> None:
    surface = surface_with(limit=1000)
    surface.fail_next("send", MessageTooLong("message is too long"))
    text = "word " * 180  # 900 characters: one piece by the advertised limit
    ids = await Streamer(surface, KEY).finish(text)
    assert len(ids) == 2
    assert " ".join(shown(surface, ids)) == text.strip()


async def test_delivery_failure_of_the_final_state_is_retried_with_backoff() -> None:
    surface, clock = surface_with(), FakeClock()
    surface.fail_next("send", DeliveryFailed("502 bad gateway"), times=2)
    ids = await clock.run(Streamer(surface, KEY, sleep=clock.sleep, clock=clock.monotonic).finish("answer"))
    assert shown(surface, ids) == ["answer"]
    assert clock.sleeps == [0.5, 1.0]


async def test_final_state_that_cannot_be_delivered_raises_delivery_failed() -> None:
    surface, clock = surface_with(), FakeClock()
    surface.fail_next("send", DeliveryFailed("403 forbidden"), times=3)
    streamer = Streamer(surface, KEY, sleep=clock.sleep, clock=clock.monotonic, max_attempts=3)
    with pytest.raises(DeliveryFailed):
        await clock.run(streamer.finish("answer"))
    assert streamer.calls == 3


async def test_delivery_failure_while_streaming_is_skipped_and_finish_delivers() -> None:
    surface, clock = surface_with(), FakeClock()
    surface.fail_next("send", DeliveryFailed("timeout"))
    ids = await stream(surface, clock, ["a", "b", "c"], step=0.4)
    assert shown(surface, ids) == ["abc"]
    assert len(surface.messages) == 1


async def test_surface_without_edits_gets_only_the_final_pieces() -> None:
    surface, clock = surface_with(limit=100, can_edit=False), FakeClock()
    chunks = [f"chunk {i} " for i in range(60)]
    ids = await stream(surface, clock, chunks, step=0.2)
    assert surface.count("edit") == 0
    assert surface.count("send") == len(ids) > 1
    assert " ".join(shown(surface, ids)) == "".join(chunks).strip()


async def test_buttons_go_on_the_last_piece_only() -> None:
    surface = surface_with(limit=60)
    buttons = (Button("Allow once", "t1", "primary"), Button("Deny", "t2", "danger"))
    ids = await Streamer(surface, KEY).finish("word " * 30, buttons)
    assert [surface.messages[i].buttons for i in ids] == [()] * (len(ids) - 1) + [buttons]


async def test_post_returns_the_id_and_edit_message_replaces_the_text() -> None:
    surface = surface_with()
    streamer = Streamer(surface, KEY)
    mid = await streamer.post("Allow it?", (Button("Allow once", "tok"),))
    assert surface.messages[mid].buttons
    assert await streamer.edit_message(mid, "Allow it?\n\nAllowed once.") == mid
    assert surface.messages[mid].text == "Allow it?\n\nAllowed once." and surface.messages[mid].buttons == ()


async def test_edit_message_on_a_surface_without_edits_posts_anew() -> None:
    surface = surface_with(can_edit=False)
    streamer = Streamer(surface, KEY)
    mid = await streamer.post("Allow it?")
    new = await streamer.edit_message(mid, "Denied.")
    assert new != mid and surface.messages[new].text == "Denied."


async def test_reply_that_got_shorter_deletes_the_messages_it_no_longer_needs() -> None:
    surface, clock = surface_with(limit=100), FakeClock()
    chunks = [f"line {i} of text\n" for i in range(20)]
    ids = await stream(surface, clock, chunks, step=0.5, final="short final answer")
    assert shown(surface, ids) == ["short final answer"]
    assert len(surface.deleted) >= 1 and len(surface.messages) == 1


async def test_first_message_replies_to_the_prompt() -> None:
    surface = surface_with(limit=40)
    ids = await Streamer(surface, KEY, reply_to="in-9").finish("word " * 20)
    assert [surface.messages[i].reply_to for i in ids] == ["in-9"] + [None] * (len(ids) - 1)


async def test_flusher_task_is_owned_and_gone_after_close() -> None:
    surface, clock = surface_with(), FakeClock()

    async def scenario() -> None:
        async with Streamer(surface, KEY, sleep=clock.sleep, clock=clock.monotonic) as streamer:
            streamer.update("x")
            assert any(t.get_name() == f"streamer:{KEY}" for t in asyncio.all_tasks())
        assert not any(t.get_name() == f"streamer:{KEY}" for t in asyncio.all_tasks())

    await clock.run(scenario())


async def test_default_interval_is_the_surface_edit_interval() -> None:
    surface = surface_with(edit_interval_s=2.5)
    assert Streamer(surface, KEY).interval_s == 2.5


async def test_works_on_the_real_event_loop_clock_with_a_small_interval() -> None:
    surface = surface_with()
    async with Streamer(surface, KEY, interval_s=0.001) as streamer:
        for i in range(50):
            streamer.update(f"step {i}")
            await asyncio.sleep(0)
        ids = await streamer.finish("done")
    assert shown(surface, ids) == ["done"]
    assert surface.count("send") == 1 and surface.count("edit") <= 50


class CountingFormatter:
    """The memory surface's formatter, noting everything it rendered."""

    def __init__(self, surface: MemorySurface) -> None:
        self.real = surface.formatter
        self.made: list[MemoryMessage] = []

    def render(self, blocks: Sequence[Block], *, plain: bool = False) -> MemoryMessage:
        made = self.real.render(blocks, plain=plain)
        self.made.append(made)
        return made


async def test_a_piece_is_rendered_once_and_what_was_measured_is_what_is_sent() -> None:
    surface = surface_with()
    counting = surface.formatter = CountingFormatter(surface)  # type: ignore[assignment]
    [mid] = await Streamer(surface, KEY).finish("A short answer. Done!")
    assert len(counting.made) == 1, "measured once, and not rendered again to be sent"
    assert surface.messages[mid].rendered is counting.made[0].rendered


async def test_a_long_reply_sends_only_pieces_its_formatter_measured_within_the_limit() -> None:
    surface = surface_with(limit=500)
    counting = surface.formatter = CountingFormatter(surface)  # type: ignore[assignment]
    text = "\n\n".join(f"Paragraph {i}. " + "word! " * 30 for i in range(20))
    ids = await Streamer(surface, KEY).finish([(Text(text), Footer(1.5))])
    assert len(ids) > 3
    made = {id(m.rendered) for m in counting.made}
    for mid in ids:
        assert id(surface.messages[mid].rendered) in made  # the very object measured, not a new render
        assert measure(surface.messages[mid].rendered, "utf16") <= 500
    assert isinstance(surface.messages[ids[-1]].blocks[-1], Footer), "the footer reaches the last piece as itself"


async def test_live_buttons_stay_under_the_message_being_written_and_go_once_final() -> None:
    """``live_buttons`` (a Stop button) ride on the last message while the reply streams: a split moves
    them down to the new message (the one above loses them), and the final state shows none."""
    surface, clock = surface_with(limit=20), FakeClock()
    stop = (Button("Stop", "tok", "danger"),)
    streamer = Streamer(surface, KEY, interval_s=1.0, sleep=clock.sleep, clock=clock.monotonic)
    streamer.live_buttons = stop
    seen: list[list[tuple[Button, ...]]] = []

    async def scenario() -> list[str]:
        async with streamer:
            streamer.update("first words")
            await clock.sleep(1.5)
            seen.append([m.buttons for m in surface.messages.values()])
            streamer.update("first words, then many more words")
            await clock.sleep(1.5)
            seen.append([m.buttons for m in surface.messages.values()])
            return await streamer.finish("first words, then many more words")

    ids = await clock.run(scenario())
    assert seen == [[stop], [(), stop]]
    assert [surface.messages[i].buttons for i in ids] == [(), ()]
