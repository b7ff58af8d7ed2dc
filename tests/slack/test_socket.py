"""Socket Mode: reconnects after Slack's disconnect, a dropped socket and a silent one; redeliveries
answered once; messages and mentions taken without Bolt's dispatch; an app token Slack refuses ends
the run with one sentence."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from core.lifecycle import Lifecycle
from core.store import Store
from surfaces.slack.launching import launch
from tests.fakes.slack_api import BOT_ID, BOT_USER, TEAM

from .conftest import CHANNEL, FAST, USER, SlackFactory, SlackRelayUnderTest, until


async def _turn_survives(relay: SlackRelayUnderTest, cut: str) -> None:
    asked = await relay.mention("text before the cut\nsleep 0.6\ntext  after the cut")
    await until(lambda: any("before the cut" in t for t in relay.bot_texts(asked.ts)))
    if cut == "disconnect":
        await relay.fake.disconnect("refresh_requested")
    elif cut == "kill":
        await relay.fake.kill_socket()
    else:
        relay.fake.go_silent()
    await relay.fake.wait_connected(2)
    await relay.settled(asked.ts)
    [answer] = relay.bot_texts(asked.ts)
    assert answer.startswith("before the cut after the cut")  # the turn in flight was not lost
    later = await relay.mention("text over the new connection")
    await relay.settled(later.ts)
    assert relay.bot_texts(later.ts)[0].startswith("over the new connection")


async def test_slacks_refresh_requested_reconnects_mid_turn(slack: SlackFactory) -> None:
    await _turn_survives(await slack(), "disconnect")


async def test_a_dropped_socket_is_replaced_mid_turn(slack: SlackFactory) -> None:
    relay = await slack()
    await _turn_survives(relay, "kill")
    assert relay.running.socket is not None and relay.running.socket.receiver.reconnects >= 1


async def test_a_socket_that_is_open_but_silent_is_detected_and_replaced(slack: SlackFactory) -> None:
    relay = await slack()
    await _turn_survives(relay, "silent")
    assert relay.running.socket is not None and relay.running.socket.receiver.reconnects >= 1


async def test_a_redelivered_envelope_is_answered_once(slack: SlackFactory) -> None:
    relay = await slack()
    msg = relay.fake.user_message("U0ALICE", CHANNEL, "<@U0BOT> text just once")
    event = {"type": "app_mention", "user": "U0ALICE", "text": msg.text, "ts": msg.ts, "channel": CHANNEL,
             "team": "T0FAKE", "event_ts": msg.ts}
    await relay.deliver(event, event_id="Ev-same")
    await relay.deliver(event, event_id="Ev-same", retry=1)  # Slack did not see the ack in time
    await relay.settled(msg.ts)
    await relay.deliver(event, event_id="Ev-same", retry=2)
    await asyncio.sleep(0.1)
    assert relay.prompts() == ["text just once"]
    assert len(relay.fake.bot_messages(CHANNEL, msg.ts)) == 1


async def test_messages_and_mentions_are_taken_without_bolts_dispatch(slack: SlackFactory) -> None:
    """In a burst, Bolt's dispatch of each event (every mention arrives twice) held everyone's first
    words: a message or a mention is taken and acknowledged by the relay itself, nothing else is."""
    relay = await slack()
    assert relay.running.socket is not None
    dispatched: list[str] = []

    async def note(body: dict[str, Any], next_: Callable[[], Awaitable[None]]) -> None:
        dispatched.append(str((body.get("event") or {}).get("type")))
        await next_()

    relay.running.socket.handler.app.middleware(note)
    asked = await relay.mention("text hello")  # app_mention and its twin, each acknowledged
    await relay.settled(asked.ts)
    await relay.deliver({"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "text": "text echo",
                         "ts": relay.fake.next_ts(), "channel": CHANNEL, "team": TEAM, "thread_ts": asked.ts,
                         "channel_type": "channel"})
    await relay.reply(asked.ts, "text more")  # a reply in the app's thread
    await until(lambda: len(relay.prompts()) == 2)
    await relay.settled(asked.ts)
    assert relay.prompts() == ["text hello", "text more"]
    assert dispatched == []
    await relay.fake.send_envelope(relay.fake.event_envelope({  # not a message: Bolt's (no listener for it)
        "type": "reaction_added", "user": USER, "reaction": "eyes", "event_ts": relay.fake.next_ts()}))
    await until(lambda: dispatched == ["reaction_added"])


async def test_an_app_token_slack_refuses_ends_receiving_with_one_sentence(slack: SlackFactory, fake_slack,
                                                                           tmp_path) -> None:
    fake_slack.fail_next("apps.connections.open", "invalid_auth")
    relay = SlackRelayUnderTest(fake_slack, tmp_path, timings=FAST)
    config = relay.config()
    lifecycle = Lifecycle(config, Store.open(config.store.path))
    try:
        running = await lifecycle.launch("slack", lambda host, s: launch(host, s, timings=FAST))
        async with asyncio.timeout(10):
            problem = await running.fatal()
        assert str(problem) == ("Slack refused the app-level token in $SLACK_APP_TOKEN (invalid_auth); check "
                                "surfaces.slack.app_token_env (an xapp- token with connections:write)")
    finally:
        await lifecycle.close()
