"""Huge answers cost time in proportion to their length, and past a cap the rest is a file.

The splitter keeps the cuts of a text that only grew (only the open tail is cut again), the document
hands out a part that stopped changing as the same string (and leaves a part that grew long at a
paragraph break), and an answer past ``engine.max_answer_bytes`` stops with a sentence while the
rest is posted as a file where the platform takes files. The CPU figures are in ``make bench``
(bench/bench_huge.py); nothing here measures time.
"""

from __future__ import annotations

import random

from core.acp.types import TextChunk
from core.engine import wording
from core.engine.blocks import markdown_of
from core.engine.document import PART_CHARS, Document
from core.engine.splitter import Splitter, split_rendered
from core.engine.surface import SurfaceDefaults, measure
from tests.engine.conftest import ObservingSurface, RelayFactory, make_surface

WORDS = ["alpha", "beta.", "gamma!", "δέλτα", "😀", "e\u0301", "👨\u200d👩\u200d👧", "x" * 30, "**bold**", "`code`"]


def escape(text: str) -> str:
    return text.replace(".", "\\.").replace("!", "\\!")


def random_markdown(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        r = rng.random()
        out.append("\n```py\n" if r < 0.05 else "\n~~~\n" if r < 0.08 else "\n\n" if r < 0.2 else "\n" if r < 0.3
                   else rng.choice(WORDS) + " ")
    return "".join(out)


def test_a_growing_text_is_cut_as_if_it_were_cut_whole_and_kept_cuts_are_not_redone() -> None:
    rng = random.Random(19)
    for _ in range(150):
        text = random_markdown(rng, rng.randint(1, 500))
        limit, unit = rng.choice([40, 100, 300]), rng.choice(["chars", "utf16"])
        splitter = Splitter(escape, limit, unit)  # type: ignore[arg-type]
        for end in sorted(rng.sample(range(len(text) + 1), min(6, len(text) + 1))):
            splitter.split(text[:end])
        pieces = splitter.split(text)
        assert pieces == split_rendered(text, escape, limit, unit)  # type: ignore[arg-type]
        assert all(measure(escape(p), unit) <= limit for p in pieces)  # type: ignore[arg-type]


def test_pieces_a_longer_text_did_not_change_are_the_same_strings() -> None:
    para = "A sentence of the answer, and another one. " * 6
    splitter = Splitter(escape, 500, "chars")
    first = splitter.split("\n\n".join([para] * 20))
    second = splitter.split("\n\n".join([para] * 40))
    assert len(second) > len(first) > 10
    kept = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a is not b)
    assert kept >= len(first) - 5, "only the pieces whose cut looked at the end are cut again"
    assert second[: len(first) - 1] == first[:-1]


def test_a_long_part_is_left_at_a_paragraph_break_and_unchanged_parts_are_the_same_strings() -> None:
    doc = Document()
    para = "word " * 100 + "\n\n"
    for _ in range(3 * PART_CHARS // len(para)):
        doc.apply(TextChunk(para))
    parts = doc.parts()
    assert len(parts) >= 3
    assert all(len(markdown_of(p)) < 2 * PART_CHARS for p in parts)
    assert "\n\n".join(map(markdown_of, parts)).replace("\n", "") == doc.text.replace("\n", "")
    doc.apply(TextChunk("the end"))
    again = doc.parts()
    assert all(a is b for a, b in zip(parts[:-1], again, strict=False)), "parts that stopped are handed out as they are"
    assert markdown_of(again[-1]).endswith("the end")


def test_a_code_block_cut_between_parts_is_reopened_in_the_next() -> None:
    doc = Document()
    doc.apply(TextChunk("Here it is:\n\n```python\n"))
    line = "    value = compute(step)  # a line of code\n"
    for _ in range(2 * PART_CHARS // len(line)):
        doc.apply(TextChunk(line))
    doc.apply(TextChunk("```\n\nDone."))
    parts = [markdown_of(p) for p in doc.parts()]
    assert len(parts) >= 2
    assert all(p.startswith("```python\n") for p in parts[1:])
    assert parts[-1].endswith("Done.")


def test_past_the_cap_the_answer_stops_with_a_sentence_and_the_rest_is_kept() -> None:
    doc = Document(max_bytes=1024)
    whole = "".join(f"line {i} of the answer, é\n" for i in range(200))
    for i in range(0, len(whole), 100):
        doc.apply(TextChunk(whole[i:i + 100]))
    doc.finish(1.0)
    assert len(doc.text.encode()) <= 1024
    assert doc.text + doc.overflow == whole
    assert doc.text.endswith("\n"), "cut after a whole line"
    assert wording.answer_cut_text(1024) in markdown_of(doc.parts()[-1])


class NoFiles(ObservingSurface):
    """A platform that takes no files: the core's fallback applies."""

    send_file = SurfaceDefaults.send_file


async def test_an_answer_past_the_cap_is_cut_and_the_rest_posted_as_a_file(relay: RelayFactory) -> None:
    r = await relay(engine={"max_answer_bytes": 4096})
    msg = await r.send("chunks 2000")  # about 11,000 bytes
    await r.idle()
    answer = r.answer(msg)
    assert wording.answer_cut_text(4096) in answer and "w1999" not in answer
    [(mid, (name, data))] = r.surface.files.items()
    assert name == "answer-rest.md" and data.decode().rstrip().endswith("w1999")
    assert (answer.split(wording.answer_cut_text(4096))[0].replace("\n", "") + data.decode()).count("w1000 ") == 1
    assert r.surface.messages[mid].text == wording.answer_rest_caption(len(data))
    assert r.surface.messages[mid].reply_to == msg.message_id


async def test_where_no_files_are_taken_a_sentence_says_the_rest_was_left_out(relay: RelayFactory) -> None:
    surface = NoFiles(capabilities=make_surface().capabilities)
    r = await relay(surface=surface, engine={"max_answer_bytes": 4096})
    await r.send("chunks 2000")
    await r.idle()
    assert not surface.files
    assert any(t.startswith("The rest of the answer (") and "left out" in t for t in r.texts())
