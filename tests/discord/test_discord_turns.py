"""Whole streamed turns through the real discord.py client: in a DM, and in a thread a mention opens."""

from __future__ import annotations

from tests.discord.harness import ALICE, RelayFactory, until


async def test_a_dm_is_one_conversation_streamed_by_send_and_edit(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE, "alice")
    first = await r.fake.say(dm, ALICE, "text hello\nsleep 0.3\ntext  world")
    await until(lambda: any("world" in t for t in r.bot_texts(dm)), "the answer")
    await r.settled()
    answer = r.fake.bot_messages(dm)
    assert len(answer) == 1
    assert answer[0]["content"].startswith("hello world")
    assert "⏱" in answer[0]["content"]  # the footer: the turn is over
    assert answer[0]["message_reference"]["message_id"] == str(first)
    assert answer[0].get("_edits", 0) >= 1  # streamed: posted, then edited
    assert r.fake.calls_to("POST", f"/channels/{dm}/typing")
    second = await r.fake.say(dm, ALICE, "again")
    await until(lambda: any("echo: again" in t for t in r.bot_texts(dm)), "the second answer")
    assert r.prompts() == ["text hello\nsleep 0.3\ntext  world", "again"]
    assert second > first
