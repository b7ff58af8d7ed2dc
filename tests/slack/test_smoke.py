from __future__ import annotations

from .conftest import SlackFactory


async def test_a_mention_is_answered_in_a_thread(slack: SlackFactory) -> None:
    relay = await slack()
    asked = await relay.mention("text hello\nsleep 0.2\ntext  world")
    await relay.settled(asked.ts)
    print(relay.transcript(asked.ts))
    print(relay.fake.calls)
    assert relay.prompts() == ["text hello\nsleep 0.2\ntext  world"]
