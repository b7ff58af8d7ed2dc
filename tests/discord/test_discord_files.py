"""An answer past ``engine.max_answer_bytes`` stops with a sentence on Discord, and the rest arrives as
a message with the file attached, through discord.py against the fake Discord (multipart upload)."""

from __future__ import annotations

from core.engine import wording
from tests.discord.harness import ALICE, RelayFactory, until


async def test_the_rest_of_an_answer_past_the_cap_is_an_attachment(relay: RelayFactory) -> None:
    r = await relay(engine={"edit_interval_s": 0.02, "max_answer_bytes": 4096})
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "chunks 2000")  # about 11,000 bytes
    with_file = lambda: [m for m in r.fake.bot_messages(dm) if m["attachments"]]  # noqa: E731
    await until(with_file, "the rest as an attachment")
    [message] = with_file()
    [attached] = message["attachments"]
    data = next(v for k, v in r.fake.attachments.items() if k.endswith("-answer-rest.md"))
    assert attached["filename"] == "answer-rest.md" and attached["size"] == len(data)
    assert data.decode().rstrip().endswith("w1999")
    assert message["content"] == wording.answer_rest_caption(len(data))
    texts = r.bot_texts(dm)
    assert any(wording.answer_cut_text(4096) in t for t in texts) and "w1999" not in "".join(texts)


async def test_the_agents_files_come_back_as_attachments(relay: RelayFactory) -> None:
    r = await relay()
    (r.tmp / "report.txt").write_text("all good\n")
    (r.tmp / "big.bin").write_bytes(b"x" * (10 * 1024 * 1024 + 1))
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text done\nlink report.txt\nlink big.bin")
    with_file = lambda: [m for m in r.fake.bot_messages(dm) if m["attachments"]]  # noqa: E731
    await until(lambda: with_file() and r.idle(), "the file attached")
    [message] = with_file()
    assert [a["filename"] for a in message["attachments"]] == ["report.txt"]
    assert next(v for k, v in r.fake.attachments.items() if k.endswith("-report.txt")) == b"all good\n"
    assert message["content"] == "📎 report.txt (9 B)"
    assert any("big.bin was not sent: it is 10.0 MB, over the 10.0 MB this platform takes." in t
               for t in r.bot_texts(dm))
