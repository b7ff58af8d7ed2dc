"""An answer past ``engine.max_answer_bytes`` stops with a sentence on Telegram, and the rest arrives
as a document (``sendDocument``) below it, through python-telegram-bot against the fake Bot API."""

from __future__ import annotations

from core.engine import wording
from tests.fakes.telegram_api import FakeBotApi
from tests.telegram.conftest import USER, TgFactory, until


async def test_the_rest_of_an_answer_past_the_cap_is_a_document(api: FakeBotApi, tg: TgFactory) -> None:
    await tg(engine={"max_answer_bytes": 4096})
    api.private(USER)
    api.say(USER, "chunks 2000")  # about 11,000 bytes
    documents = lambda: [m for m in api.bot_messages(USER) if "document" in m]  # noqa: E731
    await until(documents, "the rest as a document")
    [doc] = documents()
    data = api.files[f"documents/{doc['document']['file_id']}"]
    assert doc["document"]["file_name"] == "answer-rest.md"
    assert data.decode().rstrip().endswith("w1999") and doc["caption"] == wording.answer_rest_caption(len(data))
    answer = [m["text"] for m in api.bot_messages(USER) if "text" in m]
    assert any(wording.answer_cut_text(4096) in t for t in answer)
    assert "w1999" not in "".join(answer)


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


async def test_the_agents_files_come_back_as_documents_and_photos(api: FakeBotApi, tg: TgFactory) -> None:
    r = await tg()
    work = r.tmp / "work"
    work.mkdir(exist_ok=True)
    (work / "notes.md").write_text("# Notes\n")
    (work / "chart.png").write_bytes(PNG)
    (work / "fake.png").write_bytes(b"GIF? no, text")
    (r.tmp / "outside.txt").write_text("no")
    api.private(USER)
    api.say(USER, "text here\nlink notes.md\nlink chart.png\nlink fake.png\nlink ../outside.txt")
    await until(lambda: len([m for m in api.bot_messages(USER) if "document" in m or "photo" in m]) == 3,
                "three files")
    documents = {m["document"]["file_name"]: api.files[f"documents/{m['document']['file_id']}"]
                 for m in api.bot_messages(USER) if "document" in m}
    assert documents == {"notes.md": b"# Notes\n", "fake.png": b"GIF? no, text"}, "not an image: a document"
    [photo] = [m for m in api.bot_messages(USER) if "photo" in m]
    assert api.files[f"photos/{photo['photo'][0]['file_id']}"] == PNG and photo["caption"] == "📎 chart.png (72 B)"
    said = "\n".join(m["text"] for m in api.bot_messages(USER) if "text" in m)
    assert "outside.txt was not sent: it is outside the conversation's project folder." in said
