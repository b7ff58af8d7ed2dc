"""Approvals with Block Kit buttons (one-time values, stale presses), the refusal card, Slack's reset hint."""

from __future__ import annotations

import dataclasses
import json

from core.engine import wording
from surfaces.slack import wording as slack_wording

from .conftest import CHANNEL, STRANGER, USER, SlackFactory, until

PERMISSION = "text checking first\npermission p1\ntext  all done"


async def test_an_approval_is_granted_with_a_button_and_the_prompt_shows_the_outcome(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention(PERMISSION)
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)))
    [prompt] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    labels = [b["text"]["text"] for b in prompt.buttons]
    assert labels == [wording.ALLOW_ONCE_LABEL, wording.allow_session_label("p1"), wording.DENY_LABEL]
    assert len({b["value"] for b in prompt.buttons}) == 3  # one-time values, one per choice
    await relay.press(prompt, wording.ALLOW_ONCE_LABEL)
    await relay.settled(asked.ts)
    await until(lambda: "Allowed once" in relay.fake.find(CHANNEL, prompt.ts).shown)
    assert relay.fake.find(CHANNEL, prompt.ts).buttons == []
    texts = relay.bot_texts(asked.ts)
    assert texts[0].startswith("checking first")
    assert "permission:selected:allow-once" in texts[-1] and "all done" in texts[-1]  # below the prompt
    assert relay.fake.ephemerals(USER) == []  # a press that worked needs no extra answer


async def test_a_stale_press_answers_expired_privately_and_changes_nothing(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention(PERMISSION)
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)))
    [prompt] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    stale = dataclasses.replace(prompt, blocks=json.loads(json.dumps(prompt.blocks)))  # as a client still shows it
    await relay.press(prompt, wording.DENY_LABEL, trigger_id="t-first")
    await relay.settled(asked.ts)
    await until(lambda: "Denied" in relay.fake.find(CHANNEL, prompt.ts).shown)
    decided = relay.fake.find(CHANNEL, prompt.ts).shown
    await relay.press(stale, wording.ALLOW_ONCE_LABEL, trigger_id="t-late")
    await until(lambda: len(relay.fake.ephemerals(USER)) == 1)
    assert relay.fake.ephemerals(USER)[0].shown == wording.PRESS_EXPIRED
    assert relay.fake.find(CHANNEL, prompt.ts).shown == decided
    assert "permission:selected:reject" in relay.bot_texts(asked.ts)[-1]


async def test_a_press_delivered_twice_is_applied_once_and_never_answers_expired(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention(PERMISSION)
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)))
    [prompt] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    again = dataclasses.replace(prompt, blocks=json.loads(json.dumps(prompt.blocks)))
    await relay.press(prompt, wording.ALLOW_ONCE_LABEL, trigger_id="t-same")
    await relay.press(again, wording.ALLOW_ONCE_LABEL, trigger_id="t-same")  # Slack redelivered it
    await relay.settled(asked.ts)
    await until(lambda: "Allowed once" in relay.fake.find(CHANNEL, prompt.ts).shown)
    assert relay.fake.ephemerals(USER) == []


async def test_a_press_by_someone_not_allowed_is_refused_privately(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention(PERMISSION)
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)))
    [prompt] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    await relay.press(prompt, wording.ALLOW_ONCE_LABEL, user=STRANGER)
    await until(lambda: len(relay.fake.ephemerals(STRANGER)) == 1)
    assert STRANGER in relay.fake.ephemerals(STRANGER)[0].shown
    assert relay.fake.find(CHANNEL, prompt.ts).buttons  # still waiting for the person who may decide
    await relay.press(prompt, wording.DENY_LABEL)
    await relay.settled(asked.ts)


REFUSAL = json.dumps({"stopReason": "CONTENT_FILTERED", "refusal": {
    "category": "policy", "explanation": "The selected model cannot continue this conversation.",
    "recommendedModel": "claude-sonnet"}})


async def test_a_refusal_shows_one_card(slack: SlackFactory) -> None:
    relay = await slack(flags=("--kiro",))
    asked = await relay.mention(f"kiro_meta {REFUSAL}\ntext The selected model cannot continue this conversation."
                                "\nstop refusal")
    await relay.settled(asked.ts)
    shown = "\n".join(relay.bot_texts(asked.ts))
    assert shown.count(wording.REFUSAL_LEAD) == 1
    assert "Category: policy" in shown and "Suggested model: claude-sonnet" in shown
    assert shown.count("The selected model cannot continue this conversation.") == 1  # said once, not twice


async def test_prose_that_suggests_a_new_conversation_adds_slacks_way_to_start_one(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("error -32603 prompt is too long: maximum context length exceeded")
    await relay.settled(asked.ts)
    [answer] = relay.bot_texts(asked.ts)
    assert "start a new conversation." in answer and slack_wording.RESET_HINT in answer
    assert answer.index("start a new conversation.") < answer.index(slack_wording.RESET_HINT)


async def test_stop_under_an_answer_slack_does_not_stream_ends_the_turn_and_goes_away(slack: SlackFactory) -> None:
    """Where Slack does not stream, the answer is a message edited as it grows, with a Stop button under
    it until it is final; pressed, the turn ends as the stop command ends it. A native stream carries
    no button (Slack's streams take none)."""
    relay = await slack()
    relay.fake.streaming = False
    asked = await relay.mention("text working on it\nhang")
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)), "the Stop button")
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert [b["text"]["text"] for b in answer.buttons] == [wording.STOP_LABEL]
    stale = dataclasses.replace(answer, blocks=json.loads(json.dumps(answer.blocks)))  # as a client still shows it
    await relay.press(answer, wording.STOP_LABEL)
    await relay.settled(asked.ts)
    assert relay.methods().count("session/cancel") == 1
    [answer] = relay.fake.bot_messages(CHANNEL, asked.ts)
    assert answer.buttons == [] and answer.shown.startswith("working on it") and wording.STOPPED in answer.shown
    assert relay.fake.ephemerals(USER) == []  # a press that worked needs no extra answer
    await relay.press(stale, wording.STOP_LABEL, trigger_id="t-late")
    await until(lambda: len(relay.fake.ephemerals(USER)) == 1)
    assert relay.fake.ephemerals(USER)[0].shown == wording.PRESS_EXPIRED
    assert relay.methods().count("session/cancel") == 1
    relay.fake.streaming = True
    streamed = await relay.mention("text streamed\nsleep 0.3\ntext  answer", channel="C0OTHER")
    await relay.settled(streamed.ts, channel="C0OTHER")
    [answer] = relay.fake.bot_messages("C0OTHER", streamed.ts)
    assert answer.stream == "stopped" and answer.buttons == []
    called = [method for method, params in relay.fake.calls if params.get("channel") == "C0OTHER"]
    assert "chat.startStream" in called and "chat.update" not in called and "chat.postMessage" not in called
