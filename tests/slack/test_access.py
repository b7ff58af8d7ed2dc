"""Who may talk to the agent: ``allowed_user_ids`` (Slack member ids); bots, edits and the app itself never."""

from __future__ import annotations

from tests.fakes.slack_api import BOT_ID, BOT_USER, TEAM

from .conftest import CHANNEL, STRANGER, USER, SlackFactory, until


async def test_a_person_not_allowed_is_told_once_privately_with_their_member_id(slack: SlackFactory) -> None:
    relay = await slack()
    first = await relay.mention("text secret plans", user=STRANGER)
    await until(lambda: len(relay.fake.ephemerals(STRANGER)) == 1)
    [refusal] = relay.fake.ephemerals(STRANGER)
    assert STRANGER in refusal.shown and refusal.thread_ts == first.ts
    await relay.reply(first.ts, "text more secret plans", user=STRANGER)
    await relay.mention("text and more", user=STRANGER)
    allowed = await relay.mention("text hello")  # the allowed person is answered meanwhile
    await relay.settled(allowed.ts)
    assert len(relay.fake.ephemerals(STRANGER)) == 1  # told once
    assert relay.prompts() == ["text hello"]  # their text never reached the agent
    assert relay.fake.bot_messages(CHANNEL, first.ts) == []  # nothing public in their thread


async def test_replies_in_a_thread_a_stranger_started_stay_between_the_people(slack: SlackFactory) -> None:
    relay = await slack()
    first = await relay.mention("text hello?", user=STRANGER)
    await until(lambda: len(relay.fake.ephemerals(STRANGER)) == 1)
    await relay.reply(first.ts, "text what is this bot", user="U0EVE")
    await relay.reply(first.ts, "text no idea", user=USER)  # no mention: a conversation among people
    asked = await relay.mention("text now for the agent", thread_ts=first.ts)  # a mention joins the thread
    await relay.settled(first.ts)
    assert relay.fake.ephemerals("U0EVE") == []  # never told anything: she was not talking to the app
    assert relay.prompts() == ["text now for the agent"]
    assert relay.bot_texts(first.ts)[0].startswith("now for the agent") and asked.thread_ts == first.ts


async def test_a_person_not_allowed_in_a_dm_is_told_privately_there(slack: SlackFactory) -> None:
    relay = await slack()
    await relay.dm("text let me in", user=STRANGER, channel="D0MALLORY")
    await until(lambda: len(relay.fake.ephemerals(STRANGER)) == 1)
    assert relay.fake.ephemerals(STRANGER)[0].channel == "D0MALLORY"
    assert relay.prompts() == []


async def test_the_apps_own_messages_other_bots_and_edits_are_ignored(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text hello")
    await relay.settled(asked.ts)
    ts = relay.fake.next_ts()
    base = {"channel": CHANNEL, "team": TEAM, "thread_ts": asked.ts, "channel_type": "channel"}
    await relay.deliver({"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "text": "text echo", "ts": ts, **base})
    await relay.deliver({"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER", "username": "ci",
                         "text": "text build passed", "ts": relay.fake.next_ts(), **base})
    await relay.deliver({"type": "message", "user": "U0CIBOT", "bot_id": "B0CI", "text": "text from a bot user",
                         "ts": relay.fake.next_ts(), **base})
    await relay.deliver({"type": "message", "subtype": "message_changed", "hidden": True, "ts": relay.fake.next_ts(),
                         "message": {"user": USER, "text": "text edited", "ts": asked.ts}, **base})
    await relay.reply(asked.ts, "text still here")
    await until(lambda: len(relay.prompts()) == 2)
    await relay.settled(asked.ts)
    assert relay.prompts() == ["text hello", "text still here"]
    assert relay.fake.ephemerals("U0CIBOT") == []  # a bot is never told it is not allowed


async def test_a_mention_arriving_as_app_mention_and_as_message_is_answered_once(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text once")  # Slack sends both events for a mention
    await relay.settled(asked.ts)
    assert relay.prompts() == ["text once"]
    assert len(relay.fake.bot_messages(CHANNEL, asked.ts)) == 1
