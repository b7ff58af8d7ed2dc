"""Whole turns through the real slack-bolt app and the fake Slack: threads, streaming, long replies."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from core.engine import edit_wording, wording
from tests.fakes.slack_api import SlackMessage

from .conftest import BOT_USER, CHANNEL, DM, FAST, TEAM, USER, SlackFactory, until

FENCE = re.compile(r"(?m)^ {0,3}```")


def methods(relay_calls: list[tuple[str, dict[str, object]]]) -> list[str]:
    return [m for m, _ in relay_calls]


async def test_a_mention_streams_its_answer_natively_in_a_thread_under_it(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text hello\nsleep 0.2\ntext  world")
    await relay.settled(asked.ts)
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert answer.thread_ts == asked.ts  # the reply is in a thread under the mention
    assert answer.stream == "stopped" and answer.shown.startswith("hello world\n\n⏱ ")
    called = methods(relay.fake.calls)
    assert called.index("chat.startStream") < called.index("chat.appendStream") < called.index("chat.stopStream")
    assert "chat.postMessage" not in called and "chat.update" not in called
    start = next(p for m, p in relay.fake.calls if m == "chat.startStream")
    assert (start["recipient_user_id"], start["recipient_team_id"]) == ("U0ALICE", "T0FAKE")
    statuses = [s for _, _, s in relay.fake.statuses]
    assert statuses[0] == "is working…" and statuses[-1] == ""
    assert relay.prompts() == ["text hello\nsleep 0.2\ntext  world"]  # the mention was stripped


async def test_where_the_workspace_does_not_stream_the_answer_is_posted_and_edited(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.streaming = False
    asked = await relay.mention("text one\nsleep 0.2\ntext  two")
    await relay.settled(asked.ts)
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert answer.shown.startswith("one two\n\n⏱ ") and answer.edits >= 1
    assert answer.blocks[0]["type"] == "markdown" and answer.text.startswith("one two")
    second = await relay.mention("text again")
    await relay.settled(second.ts)
    # The channel's refusal is remembered: the next reply is not tried as a stream at all.
    assert methods(relay.fake.calls).count("chat.startStream") == 1
    assert relay.bot_texts(second.ts)[0].startswith("again")


async def test_where_a_stream_is_refused_the_words_so_far_are_posted_without_waiting_for_more(
        slack: SlackFactory) -> None:
    """The refused stream's words are posted at once, not when the agent next writes (it may run a tool
    for minutes first)."""
    relay = await slack()
    relay.fake.streaming = False
    asked = await relay.mention("text first words\nhang")
    await until(lambda: any("first words" in t for t in relay.bot_texts(asked.ts)), "the words so far")
    assert "chat.startStream" in methods(relay.fake.calls)
    await relay.reply(asked.ts, "!stop")
    await relay.settled(asked.ts)
    [answer] = relay.bot_texts(asked.ts)
    assert answer.startswith("first words") and wording.STOPPED in answer


async def test_replies_in_the_thread_continue_the_conversation_without_a_mention(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text first")
    await relay.settled(asked.ts)
    await relay.reply(asked.ts, "text second")
    await until(lambda: len(relay.fake.bot_messages(CHANNEL, asked.ts)) == 2)
    await relay.settled(asked.ts)
    assert relay.prompts() == ["text first", "text second"]
    assert len(relay.engine.conversations) == 1  # one thread, one conversation


async def test_messages_outside_the_apps_threads_never_reach_the_agent(slack: SlackFactory) -> None:
    relay = await slack()
    stranger_thread = relay.fake.user_message("U0BOB", CHANNEL, "a thread between people")
    await relay.reply(stranger_thread.ts, "text not for the agent")
    plain = relay.fake.user_message("U0ALICE", CHANNEL, "text not for the agent either")
    await relay.deliver({"type": "message", "channel_type": "channel", "user": "U0ALICE", "text": plain.text,
                         "ts": plain.ts, "channel": CHANNEL, "team": "T0FAKE"})
    asked = await relay.mention("text for the agent")
    await relay.settled(asked.ts)
    assert relay.prompts() == ["text for the agent"]
    assert relay.fake.bot_messages(CHANNEL, stranger_thread.ts) == []


async def test_a_dm_starts_a_thread_and_a_new_dm_starts_a_new_conversation(slack: SlackFactory) -> None:
    relay = await slack()
    first = await relay.dm("text hi")
    await relay.settled(first.ts, DM)
    [answer] = relay.fake.bot_messages(DM, first.ts)
    assert answer.thread_ts == first.ts
    start = next(p for m, p in relay.fake.calls if m == "chat.startStream")
    assert "recipient_user_id" not in start  # a DM stream needs no recipient
    await relay.reply(first.ts, "text again", channel=DM)
    await until(lambda: len(relay.fake.bot_messages(DM, first.ts)) == 2)
    await relay.settled(first.ts, DM)
    later = await relay.dm("text fresh")
    await relay.settled(later.ts, DM)
    first_session = relay.store.get_conversation(relay.key(first.ts, DM))
    later_session = relay.store.get_conversation(relay.key(later.ts, DM))
    assert first_session is not None and later_session is not None
    assert first_session.session_id != later_session.session_id  # a new thread is a new conversation


def long_script(blocks: int, lines: int) -> str:
    """An answer of ``blocks`` paragraphs each followed by a Python code block of ``lines`` lines."""
    steps = []
    for b in range(blocks):
        code = "\n".join(f"value_{b}_{i} = {i} * {i}  # a line of code that is long enough" for i in range(lines))
        chunk = f"Paragraph {b} explains the code below.\n\n```python\n{code}\n```\n\n"
        steps.append("update " + json.dumps({"sessionUpdate": "agent_message_chunk",
                                             "content": {"type": "text", "text": chunk}}))
    return "\n".join(steps)


def fences_balanced(message: SlackMessage) -> bool:
    return len(FENCE.findall(message.shown)) % 2 == 0


async def test_a_long_reply_is_split_into_messages_with_every_code_block_intact(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention(long_script(4, 120))  # about 29,000 characters
    await relay.settled(asked.ts)
    answer = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert len(answer) >= 3
    assert all(len(m.shown) <= 12_000 for m in answer)
    assert all(fences_balanced(m) for m in answer)
    whole = "\n".join(m.shown for m in answer)
    for b in range(4):
        assert f"value_{b}_119 = 119 * 119" in whole and f"Paragraph {b} explains" in whole
    assert answer[-1].shown.rstrip().splitlines()[-1].startswith("⏱ ")
    assert all(m.stream in ("", "stopped") for m in answer)  # no stream left open


async def test_a_stream_rolls_over_to_a_new_message_before_slack_would_end_it(slack: SlackFactory) -> None:
    relay = await slack(timings=dataclasses.replace(FAST, rollover_after_s=0.25))
    asked = await relay.mention("text part one\nsleep 0.5\ntext  part two\nsleep 0.5\ntext  part three")
    await relay.settled(asked.ts)
    answer = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert len(answer) >= 2
    assert all(m.stream == "stopped" for m in answer)
    whole = " ".join(m.shown for m in answer)
    assert "part one" in whole and "part three" in whole
    assert whole.count("part one") == 1  # nothing repeated across the messages


async def test_a_stream_slack_ends_mid_turn_is_finished_as_an_ordinary_message(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.stream_expiry_s = 0.3
    asked = await relay.mention("text before\nsleep 0.6\ntext  after")
    await relay.settled(asked.ts)
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert answer.shown.startswith("before after\n\n⏱ ")
    assert answer.stream == "expired" and answer.edits >= 1  # Slack ended it; chat.update finished it
    assert "message_not_in_streaming_state" not in answer.shown
    assert wording.delivery_failure_text() not in relay.transcript(asked.ts)


async def test_a_stream_slack_ends_just_before_it_is_stopped_still_shows_the_final_answer(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.stream_expiry_s = 0.2
    asked = await relay.mention("text the whole answer\nsleep 0.4")  # nothing is appended after it expires
    await relay.settled(asked.ts)
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert answer.shown.startswith("the whole answer\n\n⏱ ") and answer.edits >= 1
    called = methods(relay.fake.calls)
    assert called.index("chat.stopStream") < called.index("chat.update")  # stop refused, then updated


def chunk(text: str) -> str:
    return "update " + json.dumps({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


async def test_a_code_block_streams_natively_as_it_is_written(slack: SlackFactory) -> None:
    relay = await slack()
    steps = [chunk("Here is the code:\n\n```python\n"), "sleep 0.1", chunk("x = 1\n"), "sleep 0.1",
             chunk("y = 2\n"), "sleep 0.1", chunk("```\n\nThat is all.")]
    asked = await relay.mention("\n".join(steps))
    await relay.settled(asked.ts)
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert answer.shown.startswith("Here is the code:\n\n```python\nx = 1\ny = 2\n```\n\nThat is all.")
    called = methods(relay.fake.calls)
    assert called.count("chat.appendStream") >= 2 and "chat.update" not in called  # a stream all the way
    assert fences_balanced(answer)


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_forwarded_message_reaches_the_agent_said_to_be_forwarded(slack: SlackFactory, mode: str) -> None:
    """A message forwarded to the app (Slack's "Forward message") has no words of its own: what it says is
    in a shared attachment. Before, the app answered it with its list of commands (an empty mention)."""
    relay = await slack(mode=mode)
    msg = relay.fake.user_message(USER, DM, "")
    forwarded = {"is_share": True, "is_msg_unfurl": True, "author_id": "U0OTHER", "channel_id": "C0OTHER",
                 "ts": "1700000000.000100", "text": "deploy failed on <https://ci.example.com/run/7|run 7>",
                 "fallback": "[November 14th] Bob: deploy failed"}
    preview = {"title": "CI", "title_link": "https://ci.example.com", "text": "a page preview, not a message"}
    await relay.deliver({"type": "message", "channel_type": "im", "user": USER, "text": "", "ts": msg.ts,
                         "channel": DM, "team": TEAM, "event_ts": msg.ts, "attachments": [forwarded, preview]})
    await relay.settled(msg.ts, DM)
    assert relay.prompts() == ["Forwarded message:\ndeploy failed on run 7 (https://ci.example.com/run/7)"]


ECHOED = ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream")


@pytest.mark.parametrize(("mode", "streaming"), [("socket", True), ("socket", False), ("http", True), ("http", False)])
async def test_the_apps_own_messages_coming_back_as_events_are_taken_as_nothing(
        slack: SlackFactory, mode: str, streaming: bool) -> None:
    """An app hears of its own messages: a ``message`` event for each post, a ``message_changed`` for each
    edit and each part of a stream. Each is acknowledged and is nobody's message (no prompt, no reply)."""
    relay = await slack(mode=mode)
    relay.fake.streaming = streaming  # off: posted, then edited as it grows
    asked = await relay.mention("text one\nsleep 0.3\ntext  two\nsleep 0.3\ntext  three")
    await relay.settled(asked.ts)
    called = methods(relay.fake.calls)
    sent = sum(m in ECHOED for m in called) - (0 if streaming else called.count("chat.startStream"))  # (refused)
    assert sent >= 3
    await until(lambda: len(relay.fake.echoed) == sent, what="each came back")
    if mode == "socket":
        await until(lambda: all(eid in relay.fake.acks for eid in relay.fake.echoed), what="each acknowledged")
    else:
        assert set(relay.fake.echoed) == {"200"}
    await relay.settled(asked.ts)
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert answer.shown.startswith("one two three\n\n⏱ ")
    assert relay.prompts() == ["text one\nsleep 0.3\ntext  two\nsleep 0.3\ntext  three"]


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_an_edit_reaches_a_waiting_message_and_is_answered_as_not_sent_once_read(
        slack: SlackFactory, mode: str) -> None:
    """A person fixes a typo (``message_changed`` with its edit time): the message waiting for its turn is
    read with the fix; under the one being answered, the person reads that the edit was not sent. Slack
    adding a link's preview (the same event without an edit time) and the app's own messages changing are
    no edits. Before, every ``message_changed`` was passed over."""
    relay = await slack(mode=mode)
    first = await relay.mention("text working\nsleep 0.6\ntext done")
    await until(lambda: relay.prompts(), what="the first message is at the agent")
    second = await relay.reply(first.ts, "text fix foo.py")
    await until(lambda: any(t.startswith("Queued") for t in relay.bot_texts(first.ts)), what="the second waits")
    await relay.edit(second, "", preview=True)
    await relay.edit(second, "text fix bar.py")
    await relay.edit(first, f"<@{BOT_USER}> text working harder")
    [queued] = [m for m in relay.fake.bot_messages(CHANNEL, first.ts) if m.shown.startswith("Queued")]
    await relay.deliver({"type": "message", "subtype": "message_changed", "hidden": True, "channel": CHANNEL,
                         "ts": relay.fake.next_ts(), "message": {"type": "message", "bot_id": "B0RELAY",
                         "user": BOT_USER, "text": "edited by the app", "ts": queued.ts, "thread_ts": first.ts,
                         "edited": {"user": BOT_USER, "ts": relay.fake.next_ts()}}})
    await until(lambda: any("fix bar.py" in t for t in relay.bot_texts(first.ts)), what="the edit answered")
    await relay.settled(first.ts)
    assert relay.prompts() == ["text working\nsleep 0.6\ntext done", "text fix bar.py"]
    said = edit_wording.edit_not_sent_text("text working harder")
    assert relay.bot_texts(first.ts).count(said) == 1, "named: the message edited is far above it"


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_message_deleted_while_it_waits_is_not_answered_and_one_read_already_is_said_to_stay(
        slack: SlackFactory, mode: str) -> None:
    relay = await slack(mode=mode)
    first = await relay.mention("text working\nsleep 0.6\ntext done")
    await until(lambda: relay.prompts(), what="the first message is at the agent")
    second = await relay.reply(first.ts, "text my token is hunter2")
    await until(lambda: any(t.startswith("Queued") for t in relay.bot_texts(first.ts)), what="the second waits")
    await relay.delete(second)
    await until(lambda: any(t.startswith("🗑 Deleted") for t in relay.bot_texts(first.ts)), what="its receipt")
    await relay.delete(first)
    await until(lambda: edit_wording.DELETED_AFTER_READ in relay.bot_texts(first.ts), what="the first's deletion")
    await relay.settled(first.ts)
    assert relay.prompts() == ["text working\nsleep 0.6\ntext done"]
    assert relay.bot_texts(first.ts).count(edit_wording.DELETED_AFTER_READ) == 1


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_message_whose_forgotten_mention_is_edited_in_is_answered_in_its_thread(
        slack: SlackFactory, mode: str) -> None:
    """Slack sends no ``app_mention`` for an edit: the ``message_changed`` that adds the mention makes the
    message the relay's. Another channel message edited without one stays the people's."""
    relay = await slack(mode=mode)
    chatter = relay.fake.user_message(USER, CHANNEL, "lunch at noon?")
    forgot = relay.fake.user_message(USER, CHANNEL, "text why is the build red?")
    await relay.edit(chatter, "lunch at one?")
    await relay.edit(forgot, f"<@{BOT_USER}> text why is the build red?")
    await until(lambda: any("why is the build red?" in t for t in relay.bot_texts(forgot.ts)), what="the answer")
    await relay.settled(forgot.ts)
    await relay.reply(forgot.ts, "text and now?")  # the thread is the app's: no mention needed
    await until(lambda: any("and now?" in t for t in relay.bot_texts(forgot.ts)), what="the reply answered")
    assert relay.prompts() == ["text why is the build red?", "text and now?"]
    assert relay.bot_texts(chatter.ts) == []
