"""HTTP mode: Bolt's /slack/events on 127.0.0.1 with every request's signature checked first."""

from __future__ import annotations

import json
import time

import pytest

from core.engine import wording
from surfaces.slack import wording as slack_wording
from tests.fakes.slack_api import SlackFake
from tests.listening import handshakes_while_held

from .conftest import CHANNEL, SlackFactory, until


def mention_body(fake: SlackFake, text: str = "text signed") -> bytes:
    msg = fake.user_message("U0ALICE", CHANNEL, f"<@U0BOT> {text}")
    return json.dumps(fake.event_envelope({"type": "app_mention", "user": "U0ALICE", "text": msg.text,
                                           "ts": msg.ts, "channel": CHANNEL, "team": "T0FAKE"})).encode()


async def test_a_signed_event_is_answered(slack: SlackFactory) -> None:
    relay = await slack(mode="http")
    asked = await relay.mention("text over http")
    await relay.settled(asked.ts)
    assert relay.bot_texts(asked.ts)[0].startswith("over http")


async def test_a_burst_of_events_while_the_relay_is_busy_is_queued_not_dropped(slack: SlackFactory) -> None:
    """Slack's posts arriving all at once while the relay's loop is busy: the kernel keeps every handshake
    for the relay to accept, none waits out a retransmitted SYN (aiohttp's default backlog is 128)."""
    relay = await slack(mode="http")
    assert relay.running.http is not None
    assert handshakes_while_held(relay.running.http.port, 300) == 300
    asked = await relay.mention("text after the burst")  # served once the loop runs again
    await relay.settled(asked.ts)
    assert relay.bot_texts(asked.ts)[0].startswith("after the burst")


async def test_url_verification_is_answered_with_the_challenge(slack: SlackFactory) -> None:
    relay = await slack(mode="http")
    body = json.dumps({"token": "legacy", "challenge": "c-123", "type": "url_verification"}).encode()
    status, text = await relay.fake.post_http(body, relay.fake.signed_headers(body))
    assert status == 200 and "c-123" in text


def forged(fake: SlackFake, body: bytes, case: str) -> tuple[bytes, dict[str, str]]:
    good = fake.signed_headers(body)
    if case == "wrong secret":
        return body, fake.signed_headers(body, secret="not-the-secret")
    if case == "stale":
        return body, fake.signed_headers(body, timestamp=str(int(time.time()) - 301))
    if case == "from the future":
        return body, fake.signed_headers(body, timestamp=str(int(time.time()) + 301))
    if case == "missing":
        return body, {"Content-Type": "application/json"}
    if case == "no signature":
        return body, {k: v for k, v in good.items() if k != "X-Slack-Signature"}
    if case == "tampered":
        return body.replace(b"text signed", b"text forged"), good
    if case == "non-numeric timestamp":
        return body, fake.signed_headers(body, timestamp="soon")
    if case == "malformed signature":
        return body, {**good, "X-Slack-Signature": "v1=" + good["X-Slack-Signature"][3:]}
    if case == "non-ascii signature":
        return body, {**good, "X-Slack-Signature": "v0=\u00e9\u00e9"}
    raise AssertionError(case)


CASES = ["wrong secret", "stale", "from the future", "missing", "no signature", "tampered",
         "non-numeric timestamp", "malformed signature", "non-ascii signature"]


@pytest.mark.parametrize("case", CASES)
async def test_a_bad_signature_is_answered_401_and_reaches_no_listener(slack: SlackFactory, case: str) -> None:
    relay = await slack(mode="http")
    calls_before = len(relay.fake.calls)
    body, headers = forged(relay.fake, mention_body(relay.fake), case)
    if case == "non-ascii signature":
        headers = {k: v.encode().decode("latin-1") for k, v in headers.items()}
    status, text = await relay.fake.post_http(body, headers)
    assert (status, json.loads(text)) == (401, {"error": "invalid request"})
    assert len(relay.fake.calls) == calls_before  # Bolt never saw it: not even its auth.test ran
    asked = await relay.mention("text a genuine one")  # then a good request goes through
    await relay.settled(asked.ts)
    assert relay.prompts() == ["text a genuine one"]


async def test_a_retried_event_is_answered_once(slack: SlackFactory) -> None:
    relay = await slack(mode="http")
    msg = relay.fake.user_message("U0ALICE", CHANNEL, "<@U0BOT> text only once")
    event = {"type": "app_mention", "user": "U0ALICE", "text": msg.text, "ts": msg.ts, "channel": CHANNEL,
             "team": "T0FAKE"}
    await relay.deliver(event, event_id="Ev-http")
    await relay.deliver(event, event_id="Ev-http", retry=1)
    await relay.settled(msg.ts)
    await relay.deliver(event, event_id="Ev-http", retry=2)
    assert relay.prompts() == ["text only once"]
    assert len(relay.fake.bot_messages(CHANNEL, msg.ts)) == 1


async def test_the_slash_command_and_buttons_work_over_http(slack: SlackFactory) -> None:
    relay = await slack(mode="http")
    asked = await relay.mention("text checking\npermission p1\ntext  done")
    await until(lambda: any(m.buttons for m in relay.fake.bot_messages(CHANNEL, asked.ts)))
    [prompt] = [m for m in relay.fake.bot_messages(CHANNEL, asked.ts) if m.buttons]
    await relay.press(prompt, wording.ALLOW_ONCE_LABEL)
    await relay.settled(asked.ts)
    assert "permission:selected:allow-once" in relay.bot_texts(asked.ts)[-1]
    ack = await relay.slash()
    assert ack == {"text": slack_wording.COMPACT_SENT}
    await until(lambda: relay.prompts()[-1:] == ["/compact"])
