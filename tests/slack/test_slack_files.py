"""An answer past ``engine.max_answer_bytes`` stops with a sentence in the Slack thread, and the rest is
uploaded into the same thread as a file (slack-sdk's ``files_upload_v2``: get an upload URL, post the
bytes, complete the upload) against the fake Slack."""

from __future__ import annotations

from core.engine import wording

from .conftest import CHANNEL, SlackFactory, until


async def test_the_rest_of_an_answer_past_the_cap_is_a_file_in_the_thread(slack: SlackFactory) -> None:
    relay = await slack(engine_config={"max_answer_bytes": 4096})
    asked = await relay.mention("chunks 2000")  # about 11,000 bytes
    shared = lambda: [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.files]  # noqa: E731
    await until(shared, what="the rest shared as a file")
    [message] = shared()
    [file_id] = message.files
    upload = relay.fake.files[file_id]
    assert upload["name"] == "answer-rest.md" and upload["shared"] == (CHANNEL, asked.ts)
    assert upload["data"].decode().rstrip().endswith("w1999")
    assert message.text == wording.answer_rest_caption(len(upload["data"]))
    answer = "".join(m.shown for m in relay.fake.bot_messages(CHANNEL, asked.ts) if not m.files)
    assert wording.answer_cut_text(4096) in answer and "w1999" not in answer


async def test_the_agents_files_are_uploaded_into_the_thread(slack: SlackFactory) -> None:
    relay = await slack()
    work = relay.tmp / "work"
    work.mkdir(exist_ok=True)
    (work / "out.csv").write_text("a,b\n")
    asked = await relay.mention("text done\nlink out.csv\nlink /etc/passwd")
    shared = lambda: [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.files]  # noqa: E731
    await until(shared, what="the file shared in the thread")
    [message] = shared()
    [file_id] = message.files
    upload = relay.fake.files[file_id]
    assert upload["name"] == "out.csv" and upload["data"] == b"a,b\n" and upload["shared"] == (CHANNEL, asked.ts)
    assert message.text == "📎 out.csv (4 B)"
    await relay.settled(asked.ts)
    said = "\n".join(relay.bot_texts(asked.ts))
    assert "passwd was not sent: it is outside the conversation's project folder." in said
