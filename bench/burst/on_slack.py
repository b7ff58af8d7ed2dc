"""Slack's side: the fake Slack (Web API and Socket Mode), and people each in a channel of their own.

A person mentions the bot in their channel (Slack sends ``app_mention`` and ``message`` for it, as it
does for an app in the channel); the answer goes in the thread under the mention. Visible text is any
call that puts text in that channel: a message or its update, a stream's start, append or stop.
"""

from __future__ import annotations

from typing import Any

from bench.burst.platform import NothingToWatch
from bench.burst.stats import Timeline
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, BOT_USER, SIGNING_SECRET, TEAM, SlackFake

__all__ = ["SlackSide"]

TEXT_CALLS = frozenset({"chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream",
                        "chat.stopStream"})


def _person(i: int) -> str:
    return f"U0P{i:07d}"


def _channel(i: int) -> str:
    return f"C0P{i:07d}"


class SlackSide(NothingToWatch):
    name = "slack"

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.fake = SlackFake()
        self.count = 0
        self.fake.on_request.append(self._seen)

    async def start(self) -> None:
        await self.fake.__aenter__()

    async def close(self) -> None:
        await self.fake.__aexit__(None, None, None)

    def people(self, count: int) -> None:
        self.count = max(self.count, count)

    def relay_settings(self) -> dict[str, Any]:
        return {"enabled": True, "api_base_url": self.fake.api_url,
                "allowed_user_ids": [_person(i) for i in range(self.count)]}

    def env(self) -> dict[str, str]:
        return {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET}

    def naive_args(self) -> list[str]:
        return ["--api", self.fake.api_url]

    async def write(self, i: int, text: str) -> None:
        msg = self.fake.user_message(_person(i), _channel(i), f"<@{BOT_USER}> {text}")
        base = {"user": _person(i), "text": msg.text, "ts": msg.ts, "channel": _channel(i), "team": TEAM,
                "event_ts": msg.ts}
        if not self.fake.connected:  # the bot is starting: Slack keeps the event until it connects
            await self.fake.wait_connected(self.fake.connections + 1, timeout=60)
        self.timeline.written(i)
        await self.fake.send_envelope(self.fake.event_envelope({"type": "app_mention", **base}))
        await self.fake.send_envelope(self.fake.event_envelope({"type": "message", "channel_type": "channel",
                                                                **base}))

    def _seen(self, method: str, params: dict[str, Any]) -> None:
        self.timeline.call(method)
        if method in TEXT_CALLS:
            channel = str(params.get("channel") or "")
            if channel.startswith("C0P"):
                text = "".join(str(params.get(k) or "") for k in ("text", "markdown_text", "blocks", "chunks"))
                self.timeline.shown(int(channel[3:]), text)
        # The fake keeps every call for the tests; a long run needs only what the Timeline took.
        self.fake.calls.clear()
