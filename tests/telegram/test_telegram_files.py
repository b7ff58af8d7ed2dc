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
