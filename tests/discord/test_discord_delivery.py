"""Delivery to Discord: the 2,000-character split, 429s, gone channels, rollover, typing, the refusal card."""

from __future__ import annotations

import dataclasses
import json
import logging
import re

import pytest

from core.engine.surface import DeliveryRefused
from tests.discord.harness import ALICE, FAST, Relay, RelayFactory, until
from tests.fakes.discord_api import Failure
from tests.rendering import md

FENCE = re.compile(r"(?m)^```")


def chunk(text: str) -> str:
    """A script step streaming ``text`` as it is (newlines included)."""
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return f"update {json.dumps(update)}"


async def dm_turn(r: Relay, script: str) -> int:
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, script)
    await until(lambda: r.bot_texts(dm) and r.idle(), "the turn delivered")
    return dm


async def test_a_5000_character_reply_with_a_code_block_is_split_without_breaking_the_fence(
        relay: RelayFactory) -> None:
    r = await relay()
    lines = [f"    print('line {i:03d} of the generated program')" for i in range(110)]
    body = "Here is the program:\n\n```python\n" + "\n".join(lines) + "\n```\n\nThat is all."
    assert len(body) > 5000
    dm = await dm_turn(r, "\n".join(chunk(body[i:i + 700]) for i in range(0, len(body), 700)))
    texts = r.bot_texts(dm)
    assert len(texts) == 3
    assert all(len(t) <= 2000 for t in texts)
    assert all(len(FENCE.findall(t)) % 2 == 0 for t in texts)  # every piece closes what it opens
    assert texts[1].startswith("```python\n") and texts[2].startswith("```python\n")  # reopened, same language
    shown = [line for t in texts for line in t.splitlines() if "generated program" in line]
    assert shown == lines  # every line once, in order
    assert "That is all." in texts[2] and "⏱" in texts[2]


@pytest.mark.parametrize("via", [False, True], ids=["cloudflare-style-429", "discord-429-with-via"])
async def test_a_429_on_the_final_edits_never_loses_the_answer(relay: RelayFactory, via: bool) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text first part\nsleep 0.3\ntext  and the end")
    await until(lambda: r.bot_texts(dm), "the first message")
    r.fake.fail_next("edit", Failure(429, retry_after=0.05, via=via), times=3)
    await until(lambda: r.idle() and "⏱" in "".join(r.bot_texts(dm)), "the final state")
    texts = r.bot_texts(dm)
    assert len(texts) == 1 and texts[0].startswith("first part and the end")
    assert not r.store.pending_outbound()
    assert not r.fake._failures["edit"]  # all three 429s were served


async def test_a_channel_that_is_gone_is_a_permanent_failure(relay: RelayFactory,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text first\nsleep 0.3\ntext  second")
    await until(lambda: r.bot_texts(dm), "the first message")
    r.fake.fail_next("edit", Failure(404, 10003, "Unknown Channel"), times=50)
    r.fake.fail_next("send", Failure(404, 10003, "Unknown Channel"), times=50)
    with caplog.at_level(logging.WARNING):
        await r.settled()
    assert not r.store.pending_outbound()  # dropped, not kept to be resent forever
    assert "will not take messages" in caplog.text
    surface = r.launched.surface
    r.fake.fail_next("send", Failure(403, 50001, "Missing Access"))
    with pytest.raises(DeliveryRefused):
        await surface.send(f"discord:{dm}", md(surface, "hello"))
    with pytest.raises(DeliveryRefused):
        await surface.send("discord:123456789", md(surface, "no such channel"))


async def test_a_long_turn_continues_in_a_new_message(relay: RelayFactory) -> None:
    r = await relay(capabilities=dataclasses.replace(FAST, rollover_after_s=0.3))
    dm = await dm_turn(r, "text early words\nsleep 0.5\ntext  middle words\nsleep 0.5\ntext  late words")
    texts = r.bot_texts(dm)
    assert len(texts) >= 2
    assert texts[0].startswith("early words") and "late words" not in texts[0]
    assert "late words" in texts[-1] and "⏱" in texts[-1]
    joined = " ".join(texts)
    assert joined.index("early") < joined.index("middle") < joined.index("late")


async def test_typing_is_refreshed_while_the_agent_works(relay: RelayFactory) -> None:
    r = await relay()
    dm = await dm_turn(r, "sleep 0.8\ntext done")
    assert len(r.fake.calls_to("POST", f"/channels/{dm}/typing")) >= 3


async def test_the_refusal_card_is_shown_once(relay: RelayFactory) -> None:
    r = await relay("--kiro")
    why = "The selected model cannot continue this conversation because of its content policy."
    meta = json.dumps({"stopReason": "CONTENT_FILTERED", "refusal": {"category": "harmful", "explanation": why}})
    dm = await dm_turn(r, f"text {why}\nkiro_meta {meta}")
    shown = "\n".join(r.bot_texts(dm))
    assert shown.count("The model declined to answer this request.") == 1
    assert "Category: harmful" in shown
    assert shown.count(why) == 1  # streamed once, not repeated as the card's Why line
    assert shown.count("Use `/new` to start a new conversation") == 1  # Discord's own hint
