"""A reply interrupted by a killed relay is continued where the person sees it, never copied below.

The first ``Streamer`` streams part of a reply and is abandoned without ``finish`` (what a kill -9
leaves: messages on the platform, and the log of them the store kept). A second one ``resume``s
from that log and streams the whole reply again: it must end up in the same messages, with the
ones it no longer needs removed, and the log must describe exactly what the platform shows.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.engine import wording
from core.engine.streamed import Posted
from core.engine.streamer import Streamer
from core.engine.surface import Capabilities
from tests.fakes.memory_surface import FakeClock, MemorySurface

KEY = "memory:1"
WORDS = [f"word{i} " for i in range(400)]  # about 3,000 characters: several 1,000-unit messages


class StoreLog:
    """What the store keeps of a reply: one entry per (part, piece)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, int], Posted] = {}

    async def posted(self, entry: Posted) -> None:
        self.entries[(entry.part, entry.piece)] = entry

    def removed(self, part: int, piece: int) -> None:
        self.entries.pop((part, piece), None)

    def listed(self) -> list[Posted]:
        return [self.entries[k] for k in sorted(self.entries)]


def surface_with(limit: int = 1000, **caps: object) -> MemorySurface:
    return MemorySurface(capabilities=Capabilities(max_message_length=limit, length_unit="utf16", **caps))  # type: ignore[arg-type]


def streamer(surface: MemorySurface, clock: FakeClock, log: StoreLog) -> Streamer:
    return Streamer(surface, KEY, interval_s=0.5, sleep=clock.sleep, clock=clock.monotonic, reply_to="in-1", log=log)


async def killed_mid_reply(surface: MemorySurface, clock: FakeClock, log: StoreLog, chunks: Sequence[str],
                           parts: int = 1) -> None:
    """Stream ``chunks`` (split over ``parts`` parts) and stop without finishing, as a kill does."""
    first = streamer(surface, clock, log)

    async def scenario() -> None:
        await first.start()
        text = ""
        for chunk in chunks:
            text += chunk
            share = max(1, len(text) // parts)
            first.update([text[i * share:(i + 1) * share if i < parts - 1 else None] for i in range(parts)])
            await clock.sleep(0.05)
        await clock.sleep(1.0)  # the last flush lands
        await first.aclose()

    await clock.run(scenario())


async def rerun(surface: MemorySurface, clock: FakeClock, log: StoreLog, reply: str | list[str],
                chunks: int = 20) -> list[str]:
    """A restarted relay answers again: resumes from the log, streams ``reply`` growing, finishes."""
    second = streamer(surface, clock, log)

    async def scenario() -> list[str]:
        await second.resume(log.listed())
        async with second:
            parts = [reply] if isinstance(reply, str) else reply
            total = sum(len(p) for p in parts)
            for n in range(1, chunks + 1):  # the parts are written in order, as a turn writes them
                left, grown = total * n // chunks, []
                for p in parts:
                    grown.append(p[:left])
                    left = max(0, left - len(p))
                second.update(grown)
                await clock.sleep(0.05)
            return await second.finish(reply)

    return await clock.run(scenario())


def bot_texts(surface: MemorySurface) -> list[str]:
    return [m.text for m in surface.messages.values()]


def assert_log_matches(surface: MemorySurface, log: StoreLog, ids: Sequence[str]) -> None:
    assert [e.message_id for e in log.listed()] == list(ids)
    assert all(e.kind == "message" for e in log.listed())
    assert set(ids) == set(surface.messages), "nothing else is left on the platform"


async def test_a_reply_cut_short_by_a_kill_is_continued_in_the_same_messages() -> None:
    surface, clock, log = surface_with(), FakeClock(), StoreLog()
    await killed_mid_reply(surface, clock, log, WORDS[:250])
    before = list(surface.messages)
    assert len(before) >= 2, "the killed relay had posted several messages"
    assert [e.message_id for e in log.listed()] == before

    answer = "".join(WORDS).rstrip()
    ids = await rerun(surface, clock, log, answer)
    assert ids[: len(before)] == before, "the answer goes on in the messages the person already sees"
    assert "".join(bot_texts(surface)).replace(" ", "") == answer.replace(" ", "")
    assert_log_matches(surface, log, ids)


async def test_a_shorter_answer_after_the_restart_removes_the_messages_it_no_longer_needs() -> None:
    surface, clock, log = surface_with(), FakeClock(), StoreLog()
    await killed_mid_reply(surface, clock, log, WORDS)
    before = list(surface.messages)
    assert len(before) >= 3
    sends = surface.count("send")
    ids = await rerun(surface, clock, log, "A short answer this time.")
    assert ids == before[:1]
    assert bot_texts(surface) == ["A short answer this time."]
    assert sorted(surface.deleted) == sorted(before[1:])
    assert surface.count("send") == sends, "nothing was posted: the first message was edited"
    assert_log_matches(surface, log, ids)


async def test_where_messages_cannot_be_deleted_the_unneeded_ones_say_so() -> None:
    surface, clock, log = surface_with(can_delete=False), FakeClock(), StoreLog()
    await killed_mid_reply(surface, clock, log, WORDS)
    before = list(surface.messages)
    ids = await rerun(surface, clock, log, "Short.")
    assert ids == before[:1]
    assert [surface.messages[i].text for i in before[1:]] == [wording.MERGED_ABOVE] * (len(before) - 1)


async def test_a_reply_in_two_parts_continues_part_by_part() -> None:
    surface, clock, log = surface_with(), FakeClock(), StoreLog()
    await killed_mid_reply(surface, clock, log, WORDS[:200], parts=2)
    parts_before = {e.part for e in log.listed()}
    assert parts_before == {0, 1}
    answer = ["".join(WORDS[:150]).rstrip(), "".join(WORDS[150:]).rstrip()]
    ids = await rerun(surface, clock, log, answer)
    assert next(e.message_id for e in log.listed() if e.part == 0) == ids[0]
    in_order = [surface.messages[i].text for i in sorted(surface.messages, key=int)]
    assert "".join(in_order).replace(" ", "") == "".join(answer).replace(" ", ""), "part 1 stays below part 0"
    assert_log_matches(surface, log, ids)


async def test_before_a_prompt_is_posted_below_no_interrupted_part_is_left_above_it() -> None:
    surface, clock, log = surface_with(), FakeClock(), StoreLog()
    await killed_mid_reply(surface, clock, log, WORDS[:200], parts=2)
    part1 = [e.message_id for e in log.listed() if e.part == 1]
    second = streamer(surface, clock, log)

    async def scenario() -> None:
        await second.resume(log.listed())
        async with second:
            await second.flush(["The beginning, before an approval."])
            await second.post("The agent wants to run a tool.")

    await clock.run(scenario())
    assert not any(mid in surface.messages for mid in part1)
    assert list(surface.messages.values())[-1].text == "The agent wants to run a tool."
    assert {e.part for e in log.listed()} == {0}


async def test_a_native_stream_that_cannot_be_resumed_is_ended_with_the_line_and_then_continued() -> None:
    surface, clock, log = surface_with(can_stream_natively=True), FakeClock(), StoreLog()
    surface.stream_kind = "message"  # a Slack stream: ending it leaves a message
    await killed_mid_reply(surface, clock, log, WORDS[:40])
    [entry] = log.listed()
    assert entry.kind == "stream"

    ids = await rerun(surface, clock, log, "The whole answer.")
    ended = [c for c in surface.calls if c[0] == "end_stream" and c[3] == entry.message_id]
    assert ended and ended[0][2] == wording.INTERRUPTED_RESUMING
    assert bot_texts(surface) == ["The whole answer."], "continued in the stream's message, not below it"
    assert_log_matches(surface, log, ids)


async def test_a_draft_cut_short_is_only_a_preview_and_leaves_nothing_to_continue() -> None:
    surface, clock, log = surface_with(can_stream_natively=True), FakeClock(), StoreLog()
    await killed_mid_reply(surface, clock, log, WORDS[:40])  # a Telegram draft: no message yet
    assert [e.kind for e in log.listed()] == ["stream"] and not surface.messages
    ids = await rerun(surface, clock, log, "The whole answer.")
    assert bot_texts(surface) == ["The whole answer."]
    assert_log_matches(surface, log, ids)


async def test_without_edits_the_cut_off_messages_are_deleted_before_the_answer_is_posted() -> None:
    surface, clock, log = surface_with(can_edit=False), FakeClock(), StoreLog()
    first = streamer(surface, clock, log)
    await clock.run(first.finish("".join(WORDS[:250])))  # a final in several messages, killed before it
    before = list(surface.messages)                         # was marked answered: answered again
    ids = await rerun(surface, clock, log, "".join(WORDS).rstrip())
    assert not set(before) & set(ids)
    assert sorted(surface.deleted) == sorted(before)
    assert_log_matches(surface, log, ids)


async def test_without_edits_or_deletes_the_cut_off_answer_is_marked_before_it_is_posted_again() -> None:
    surface, clock, log = surface_with(can_edit=False, can_delete=False), FakeClock(), StoreLog()
    first = streamer(surface, clock, log)
    await clock.run(first.finish("".join(WORDS[:250])))
    before = list(surface.messages)
    ids = await rerun(surface, clock, log, "".join(WORDS).rstrip())
    marks = [m for m in surface.messages.values() if m.text == wording.INTERRUPTED_RESUMING]
    assert len(marks) == 1 and marks[0].reply_to == before[-1]
    assert int(marks[0].message_id) < int(ids[0]), "the mark comes before the answer posted again"
    assert [e.message_id for e in log.listed()] == ids
