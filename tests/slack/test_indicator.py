"""The working indicator: the assistant status, else a reaction on the person's message, else nothing;
cleared on every path, and never the reason a turn fails."""

from __future__ import annotations

from surfaces.slack import wording

from .conftest import CHANNEL, SlackFactory, until


async def test_without_the_assistant_status_a_reaction_shows_the_work_and_is_removed(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.assistant_status = False
    asked = await relay.mention("text thinking\nsleep 0.3\ntext  done")
    await until(lambda: wording.WORKING_REACTION in relay.fake.find(CHANNEL, asked.ts).reactions)
    await relay.settled(asked.ts)
    await until(lambda: not relay.fake.find(CHANNEL, asked.ts).reactions, what="the reaction removed")
    assert relay.bot_texts(asked.ts)[0].startswith("thinking done")
    again = await relay.reply(asked.ts, "text and again")
    await until(lambda: len(relay.bot_texts(asked.ts)) == 2)
    await relay.settled(asked.ts)
    await until(lambda: not relay.fake.find(CHANNEL, again.ts).reactions)
    # The channel's fallback is remembered: the status is not asked for again.
    assert [m for m, _ in relay.fake.calls].count("assistant.threads.setStatus") == 1


async def test_with_neither_status_nor_reactions_the_turn_is_answered_all_the_same(slack: SlackFactory) -> None:
    relay = await slack()
    relay.fake.assistant_status = False
    relay.fake.fail_next("reactions.add", "missing_scope", times=5)
    asked = await relay.mention("text quietly")
    await relay.settled(asked.ts)
    assert relay.bot_texts(asked.ts)[0].startswith("quietly")
    assert relay.fake.find(CHANNEL, asked.ts).reactions == set()


async def test_the_status_is_cleared_when_the_turn_fails(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text partial\nerror -32603 Internal error")
    await relay.settled(asked.ts)
    assert relay.fake.status_of(CHANNEL, asked.ts) == ""
