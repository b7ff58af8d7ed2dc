"""Slack refusing or pacing deliveries: the final answer is never lost, never shown as an agent failure."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk.errors import SlackApiError

from core.engine import wording
from surfaces.slack.launching import web_client
from surfaces.slack.settings import SlackConfig
from tests.fakes.slack_api import BOT_TOKEN, SlackFake

from .conftest import CHANNEL, SlackFactory, until


async def test_the_web_client_waits_out_one_429_itself_and_reports_the_second(fake_slack: SlackFake) -> None:
    client = web_client(SlackConfig(api_base_url=fake_slack.api_url), BOT_TOKEN)
    fake_slack.fail_next("chat.postMessage", "ratelimited", status=429, retry_after=0)
    sent = await client.chat_postMessage(channel=CHANNEL, text="after one 429")
    assert sent["ok"] and [m for m, _ in fake_slack.calls] == ["chat.postMessage", "chat.postMessage"]
    fake_slack.fail_next("chat.postMessage", "ratelimited", status=429, retry_after=0, times=2)
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel=CHANNEL, text="after two")


async def test_a_429_on_the_final_answer_is_waited_out_and_the_answer_arrives(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.streaming = False
    # Two 429s: slack-sdk's retry handler takes the first, the core holds the chat for the second.
    relay.fake.fail_next("chat.postMessage", "ratelimited", status=429, retry_after=0, times=2)
    asked = await relay.mention("text the answer")
    await relay.settled(asked.ts)
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert answer.shown.startswith("the answer\n\n⏱ ")
    assert [m for m, _ in relay.fake.calls].count("chat.postMessage") == 3


async def test_429s_while_streaming_still_end_with_the_whole_answer(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.fail_next("chat.appendStream", "ratelimited", status=429, retry_after=0, times=3)
    asked = await relay.mention("text one\nsleep 0.1\ntext  two\nsleep 0.1\ntext  three")
    await relay.settled(asked.ts)
    shown = "\n".join(relay.bot_texts(asked.ts))
    assert shown.count("one two three") == 1 and "⏱ " in shown
    assert wording.delivery_failure_text() not in shown


async def test_msg_too_long_is_re_split_and_never_shown_as_a_failure(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.streaming = False
    relay.fake.fail_next("chat.postMessage", "msg_blocks_too_long")
    words = " ".join(f"word{i}" for i in range(1400))  # about 11,000 characters: one message, until refused
    asked = await relay.mention(f"text {words}")
    await relay.settled(asked.ts)
    transcript = relay.transcript(asked.ts)
    answer = relay.bot_texts(asked.ts)
    assert len(answer) == 2  # re-split smaller after Slack refused the size
    assert " ".join(answer).startswith(words)  # every word, in order, once
    assert wording.delivery_failure_text() not in transcript
    assert "msg_" not in transcript and "failed" not in transcript.lower()


async def test_msg_too_long_mid_stream_falls_back_to_edits_and_delivers_everything(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.fail_next("chat.appendStream", "msg_too_long")
    asked = await relay.mention("text alpha\nsleep 0.1\ntext  beta\nsleep 0.1\ntext  gamma")
    await relay.settled(asked.ts)
    shown = "\n".join(relay.bot_texts(asked.ts))
    assert shown.count("alpha beta gamma") == 1
    assert wording.delivery_failure_text() not in shown
    called = [m for m, _ in relay.fake.calls]
    assert called.index("chat.appendStream") < called.index("chat.update")  # the rest went by edits


async def test_a_channel_the_app_was_removed_from_is_a_permanent_failure(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.removed.add(CHANNEL)
    asked = await relay.mention("text nobody will see this")
    key = relay.key(asked.ts)
    await until(lambda: key in relay.engine.conversations and relay.idle(key))
    assert relay.fake.bot_messages(CHANNEL, asked.ts) == []
    assert relay.store.pending_outbound() == []  # nothing kept to resend forever
    relay.fake.removed.clear()
    again = await relay.mention("text back in")
    await relay.settled(again.ts)
    assert relay.bot_texts(again.ts)[0].startswith("back in")


async def test_a_bot_token_revoked_mid_run_ends_the_run_with_one_sentence(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.streaming = False
    relay.fake.fail_next("chat.postMessage", "token_revoked", times=20)
    asked = await relay.mention("text into the void")
    async with asyncio.timeout(20):
        problem = await relay.running.fatal()
    assert str(problem) == ("Slack no longer accepts the bot token in $SLACK_BOT_TOKEN (token_revoked); check "
                            "surfaces.slack.bot_token_env")
    await until(lambda: relay.idle(relay.key(asked.ts)))
