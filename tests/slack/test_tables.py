"""Issue 22 on Slack, through slack_bolt / slack_sdk against the fake Web API: an agent's Markdown table
arrives as Slack's ``table`` block, the fake refuses tables as Slack does (one a message, 100 rows of at
most 20 cells, ``invalid_blocks``), and a refused table still reaches the person readable as text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError

from core.engine import wording
from surfaces.slack.launching import web_client
from surfaces.slack.settings import SlackConfig
from tests.fakes.slack_api import BOT_TOKEN, SlackFake

from .conftest import CHANNEL, SlackFactory

ANSWER = "Sizes:\n| Name | **Size** |\n|---|--:|\n| a.py | 12 |\n| b.py | 7 |\n\nDone."


def chunk(text: str) -> str:
    """The fake agent's script line streaming ``text`` as one chunk."""
    return "update " + json.dumps({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def raw(text: str) -> dict[str, str]:
    return {"type": "raw_text", "text": text}


def table(rows: list[list[dict[str, Any]]]) -> dict[str, Any]:
    return {"type": "table", "rows": rows}


async def test_an_answer_with_a_table_arrives_as_a_table_block_in_order(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.streaming = False
    asked = await relay.mention(chunk(ANSWER))
    await relay.settled(asked.ts)
    [answer] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if any(b["type"] == "table" for b in m.blocks)]
    kinds = [b["type"] for b in answer.blocks]
    assert kinds[:3] == ["markdown", "table", "markdown"], kinds
    assert answer.blocks[0]["text"] == "Sizes:" and answer.blocks[2]["text"].startswith("Done.")
    assert answer.blocks[1]["rows"] == [[raw("Name"), raw("Size")], [raw("a.py"), raw("12")], [raw("b.py"), raw("7")]]
    assert "Name | Size" in answer.text  # the notification reads the table too
    assert "Sizes:\n\nName | Size\na.py | 12\nb.py | 7\n\nDone." in answer.shown


async def test_a_refused_table_is_sent_again_as_text_with_the_table_aligned(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.streaming = False
    relay.fake.table_blocks = False  # this Slack takes no table block: invalid_blocks
    asked = await relay.mention(chunk(ANSWER))
    await relay.settled(asked.ts)
    transcript = relay.transcript(asked.ts)
    assert "Name | Size\n-----+-----\na.py |   12\nb.py |    7" in transcript, transcript
    assert wording.delivery_failure_text() not in transcript and "invalid_blocks" not in transcript
    assert not any(b["type"] == "table" for m in relay.fake.bot_messages(CHANNEL, asked.ts) for b in m.blocks)


async def test_a_streamed_answer_shows_the_table_as_an_aligned_code_block(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention(chunk(ANSWER))
    await relay.settled(asked.ts)
    assert "```\nName | Size\n-----+-----\na.py |   12" in "\n".join(relay.bot_texts(asked.ts))
    assert "chat.startStream" in [m for m, _ in relay.fake.calls]


@pytest.mark.parametrize("blocks", [
    [table([[raw("a")]]), table([[raw("b")]])],  # one table a message
    [table([[raw(str(i))] for i in range(101)])],  # 100 rows at most
    [table([[raw(str(i)) for i in range(21)]])],  # 20 cells a row at most
    [table([[raw("a"), raw("b")], [raw("c")]])],  # every row as wide as the others
    [table([[raw("")]])],  # a cell's text is not empty
    [table([[{"type": "image", "image_url": "http://x"}]])],  # raw_text or rich_text cells only
    [table([])],
    [{"type": "table", "rows": [[raw("a")]], "column_settings": [{"align": "middle"}]}],
])
async def test_the_fake_refuses_tables_as_slack_does(fake_slack: SlackFake, blocks: list[dict[str, Any]]) -> None:
    client = web_client(SlackConfig(api_base_url=fake_slack.api_url), BOT_TOKEN)
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel=CHANNEL, text="t", blocks=blocks)
    assert refused.value.response["error"] == "invalid_blocks"
    sent = await client.chat_postMessage(channel=CHANNEL, text="t", blocks=[
        {"type": "markdown", "text": "before"}, table([[raw("k"), raw("v")], [raw("x"), raw("1")]]),
        {"type": "markdown", "text": "after"}])
    assert fake_slack.find(CHANNEL, sent["ts"]).shown == "before\n\nk | v\nx | 1\n\nafter"
