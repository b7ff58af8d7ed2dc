"""Fixtures of the Slack tier: the fake Slack (Web API + Socket Mode) and a whole relay around it.

``slack(...)`` starts a relay as ``acp-relay run`` does (a ``core.lifecycle.Lifecycle`` on a
file-backed store, the scripted fake agent as a subprocess) with the real Slack surface (slack-bolt
and slack-sdk, unmodified) pointed at the fake. People write through the fake (``mention``, ``reply``, ``dm``,
``slash``, ``press``); what they see is read back from the fake's state (``transcript``).

Nothing here measures time: tests wait for a condition, with hang guards only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.config import RelayConfig
from core.engine.engine import Engine
from core.lifecycle import Lifecycle
from core.store import Store
from surfaces.slack.keys import Thread
from surfaces.slack.launching import SlackRelay, Timings, launch
from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, BOT_USER, SIGNING_SECRET, TEAM, SlackFake, SlackMessage
from tests.waiting import fast_sleep, until

USER = "U0ALICE"
STRANGER = "U0MALLORY"
CHANNEL = "C0GENERAL"
DM = "D0ALICE"

#: Small intervals so the whole tier stays fast; pacing is the core's and tested there.
FAST = Timings(rate_limit=None, typing_refresh_s=None, ping_interval_s=0.2, connect_timeout_s=5.0,
               reconnect_first_delay_s=0.05, reconnect_max_delay_s=0.2)




@dataclass
class SlackRelayUnderTest:
    """One relay with the Slack surface, talking to ``fake``."""

    fake: SlackFake
    tmp: Path
    mode: str = "socket"
    timings: Timings = FAST
    flags: tuple[str, ...] = ()
    allowed: tuple[str, ...] = (USER,)
    busy_timeout_s: float = 5.0
    engine_config: dict[str, Any] = field(default_factory=dict)  # merged over the "engine" section
    sections: dict[str, Any] = field(default_factory=dict)  # more top-level config sections (projects)
    engine: Engine = field(init=False)
    store: Store = field(init=False)
    running: SlackRelay = field(init=False)
    lifecycle: Lifecycle = field(init=False)

    def config(self) -> RelayConfig:
        record = self.tmp / "record.jsonl"
        args = [str(FAKE_AGENT_PATH), "--record", str(record), "--state-dir", str(self.tmp / "agent"), *self.flags]
        (self.tmp / "work").mkdir(exist_ok=True)
        return RelayConfig.model_validate({
            **self.sections,
            "agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(self.tmp / "work")}},
            "store": {"path": str(self.tmp / "relay.db")},
            "retry": {"attempts": 2, "budget_s": 10, "base_delay_s": 0.05},
            "timeouts": {"prompt_s": 60, "request_s": 10, "approval_s": 30},
            "engine": {"edit_interval_s": 0.02, **self.engine_config},
            "surfaces": {"dashboard": {"enabled": False},
                         "slack": {"enabled": True, "mode": self.mode, "api_base_url": self.fake.api_url,
                                   "allowed_user_ids": list(self.allowed), "http_port": 0}},
        })

    def open_store(self, config: RelayConfig) -> Store:
        """The relay's store: its SQLite file (a subclass may open another)."""
        return Store.open(config.store.path, busy_timeout_s=self.busy_timeout_s)

    async def start(self) -> SlackRelayUnderTest:
        config = self.config()
        self.store = self.open_store(config)
        connections = self.fake.connections  # (an earlier relay on the same fake opened some)
        self.lifecycle = Lifecycle(config, self.store, sleep=fast_sleep, cancel_wait_s=5.0)
        self.engine = self.lifecycle.engine
        try:
            running = await self.lifecycle.launch("slack", lambda host, s: launch(host, s, timings=self.timings))
        except BaseException:
            await self.lifecycle.close()
            raise
        assert isinstance(running, SlackRelay)
        self.running = running
        if self.running.http is not None:
            self.fake.http_target = f"http://127.0.0.1:{self.running.http.port}/slack/events"
        else:
            await self.fake.wait_connected(connections + 1)
        await self.lifecycle.start()
        return self

    async def close(self) -> None:
        await self.lifecycle.close()

    # -- people writing ----------------------------------------------------------------------

    async def deliver(self, event: dict[str, Any], *, event_id: str | None = None, retry: int = 0) -> None:
        """Deliver one event as Slack would in this mode (an envelope, or a signed POST)."""
        body = self.fake.event_envelope(event, event_id)
        if self.mode == "socket":
            await self.fake.push(body, retry_attempt=retry)
            return
        raw = json.dumps(body).encode()
        headers = self.fake.signed_headers(raw)
        if retry:
            headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        status, text = await self.fake.post_http(raw, headers)
        assert status == 200, (status, text)

    async def mention(self, text: str, *, user: str = USER, channel: str = CHANNEL,
                      thread_ts: str | None = None) -> SlackMessage:
        """``@relay <text>`` in a channel (Slack sends it as app_mention AND as message)."""
        msg = self.fake.user_message(user, channel, f"<@{BOT_USER}> {text}", thread_ts)
        base = {"user": user, "text": msg.text, "ts": msg.ts, "channel": channel, "team": TEAM, "event_ts": msg.ts,
                **({"thread_ts": thread_ts} if thread_ts else {})}
        await self.deliver({"type": "app_mention", **base})
        await self.deliver({"type": "message", "channel_type": "channel", **base})
        return msg

    async def reply(self, thread_ts: str, text: str, *, user: str = USER, channel: str = CHANNEL) -> SlackMessage:
        """A reply in a thread, without a mention."""
        msg = self.fake.user_message(user, channel, text, thread_ts)
        kind = "im" if channel.startswith("D") else "channel"
        await self.deliver({"type": "message", "channel_type": kind, "user": user, "text": text, "ts": msg.ts,
                            "thread_ts": thread_ts, "channel": channel, "team": TEAM, "event_ts": msg.ts})
        return msg

    async def dm(self, text: str, *, user: str = USER, channel: str = DM) -> SlackMessage:
        """A direct message to the app (not in a thread)."""
        msg = self.fake.user_message(user, channel, text)
        await self.deliver({"type": "message", "channel_type": "im", "user": user, "text": text, "ts": msg.ts,
                            "channel": channel, "team": TEAM, "event_ts": msg.ts})
        return msg

    async def edit(self, msg: SlackMessage, text: str, *, user: str = USER, preview: bool = False,
                   files: list[dict[str, Any]] | None = None) -> None:
        """The person edits ``msg`` (``message_changed`` with the edit's time), or Slack adds a link's preview
        to it (``preview``: the same event without one)."""
        edit_ts = self.fake.next_ts()
        if not preview:
            msg.text = text
        inner = {"type": "message", "user": user, "text": msg.text, "ts": msg.ts, "team": TEAM,
                 **({"thread_ts": msg.thread_ts} if msg.thread_ts else {}), **({"files": files} if files else {}),
                 **({"attachments": [{"title": "Example", "title_link": "https://example.com"}]} if preview else
                    {"edited": {"user": user, "ts": edit_ts}})}
        kind = "im" if msg.channel.startswith("D") else "channel"
        await self.deliver({"type": "message", "subtype": "message_changed", "hidden": True, "channel": msg.channel,
                            "channel_type": kind, "ts": edit_ts, "event_ts": edit_ts, "message": inner,
                            "previous_message": {"type": "message", "user": user, "ts": msg.ts}})

    async def delete(self, msg: SlackMessage, *, user: str = USER) -> None:
        """The person deletes ``msg`` (``message_deleted``, what it said in ``previous_message``)."""
        ts = self.fake.next_ts()
        kind = "im" if msg.channel.startswith("D") else "channel"
        before = {"type": "message", "user": user, "text": msg.text, "ts": msg.ts,
                  **({"thread_ts": msg.thread_ts} if msg.thread_ts else {})}
        await self.deliver({"type": "message", "subtype": "message_deleted", "hidden": True, "channel": msg.channel,
                            "channel_type": kind, "ts": ts, "event_ts": ts, "deleted_ts": msg.ts,
                            "previous_message": before})

    async def slash(self, text: str = "", *, user: str = USER, channel: str = CHANNEL,
                    trigger_id: str = "trig-1") -> Any:
        """``/compact <text>`` in a channel; returns the ack's payload (what only the sender sees)."""
        payload = {"token": "legacy", "team_id": TEAM, "team_domain": "fake", "channel_id": channel,
                   "channel_name": "general", "user_id": user, "user_name": user.lower(), "command": "/compact",
                   "text": text, "api_app_id": "A0FAKE", "response_url": f"{self.fake.api_url}response",
                   "trigger_id": trigger_id}
        if self.mode == "socket":
            return await self.fake.push(payload, "slash_commands")
        raw = self.fake.form(payload.items())
        status, body = await self.fake.post_http(raw, self.fake.signed_headers(
            raw, content_type="application/x-www-form-urlencoded"))
        assert status == 200, (status, body)
        if body.startswith("{"):
            return json.loads(body)
        return {"text": body} if body else None  # Bolt answers ack(text=...) as plain text over HTTP

    async def press(self, message: SlackMessage, label: str, *, user: str = USER, trigger_id: str = "") -> None:
        """Press the button labelled ``label`` under ``message``."""
        button = next(b for b in message.buttons if b["text"]["text"] == label)
        payload = {"type": "block_actions", "team": {"id": TEAM, "domain": "fake"},
                   "user": {"id": user, "team_id": TEAM}, "api_app_id": "A0FAKE", "token": "legacy",
                   "trigger_id": trigger_id or f"trig-{message.ts}-{label}",
                   "container": {"type": "message", "message_ts": message.ts, "channel_id": message.channel,
                                 "is_ephemeral": False, "thread_ts": message.thread_ts},
                   "channel": {"id": message.channel, "name": "general"},
                   "message": {"type": "message", "ts": message.ts, "thread_ts": message.thread_ts,
                               "text": message.text, "blocks": message.blocks},
                   "actions": [{"action_id": button["action_id"], "block_id": "b", "value": button["value"],
                                "type": "button", "action_ts": "1.1", "text": button["text"]}]}
        if self.mode == "socket":
            await self.fake.push(payload, "interactive")
            return
        raw = self.fake.form([("payload", json.dumps(payload))])
        status, body = await self.fake.post_http(raw, self.fake.signed_headers(
            raw, content_type="application/x-www-form-urlencoded"))
        assert status == 200, (status, body)

    # -- looking -----------------------------------------------------------------------------

    def key(self, thread_ts: str, channel: str = CHANNEL) -> str:
        return Thread(TEAM, channel, thread_ts).key

    def idle(self, key: str) -> bool:
        conv = self.engine.conversations.get(key)
        return conv is None or (not conv.busy and not conv.queue and (conv.worker is None or conv.worker.done()))

    async def settled(self, thread_ts: str, channel: str = CHANNEL) -> None:
        """Wait until the thread's conversation is idle and its indicator cleared."""
        key = self.key(thread_ts, channel)
        await until(lambda: key in self.engine.conversations and self.idle(key), what=f"{key} idle")
        await until(lambda: not self.fake.status_of(channel, thread_ts), what="the status cleared")

    def bot_texts(self, thread_ts: str, channel: str = CHANNEL) -> list[str]:
        return [m.shown for m in self.fake.bot_messages(channel, thread_ts)]

    def transcript(self, thread_ts: str, channel: str = CHANNEL) -> str:
        return self.fake.transcript(channel, thread_ts)

    def frames(self) -> list[dict[str, Any]]:
        """What the agent received, in order."""
        path = self.tmp / "record.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []

    def methods(self) -> list[str]:
        """The methods (and notifications) the agent received, in order."""
        return [str(f["method"]) for f in self.frames() if "method" in f]

    def prompts(self) -> list[str]:
        return ["\n".join(b.get("text", "") for b in f["params"]["prompt"] if b.get("type") == "text")
                for f in self.frames() if f.get("method") == "session/prompt"]


SlackFactory = Callable[..., Awaitable[SlackRelayUnderTest]]


async def delivered(relay: SlackRelayUnderTest, event: dict[str, object], retry: int,
                    caplog: pytest.LogCaptureFixture, event_id: str = "Ev-held") -> bool:
    """Deliver ``event`` as Slack's delivery number ``retry``; True when the relay acknowledged it (in
    Socket Mode, a refusal is known by the relay's log line: ``caplog`` counts them)."""
    body = relay.fake.event_envelope(event, event_id)
    if relay.mode == "socket":
        def refusals() -> int:
            return sum("could not be stored" in rec.getMessage() for rec in caplog.records)

        envelope = await relay.fake.send_envelope(body, retry_attempt=retry)
        await until(lambda: envelope in relay.fake.acks or refusals() > retry, "taken or refused")
        return envelope in relay.fake.acks
    raw = json.dumps(body).encode()
    headers = relay.fake.signed_headers(raw)
    if retry:
        headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_error"}
    status, _ = await relay.fake.post_http(raw, headers)
    return status == 200


@pytest.fixture
async def fake_slack() -> AsyncIterator[SlackFake]:
    async with SlackFake() as fake:
        yield fake


@pytest.fixture
async def slack(fake_slack: SlackFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackFactory]:
    """``await slack(mode="http", flags=("--models", "a,b"), timings=...)``: a started relay."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    made: list[SlackRelayUnderTest] = []

    async def build(**kw: Any) -> SlackRelayUnderTest:
        base = tmp_path / f"relay{len(made)}"
        base.mkdir()
        relay = SlackRelayUnderTest(fake_slack, base, **kw)
        await relay.start()
        made.append(relay)
        return relay

    yield build
    for relay in made:
        await relay.close()
