"""The three platforms' fakes as the chaos harness drives them: who writes where, how the platform
delivers it, what the people see, and the 429 storm.

* Telegram: three private chats (the answer streams as a draft) and two groups (posted and edited,
  at a group's pace); in a group the person mentions the bot.
* Discord: four DMs and one channel conversation that starts with a mention (the relay opens a
  thread for it; the person goes on writing in that thread once it is there).
* Slack: five channels; each conversation starts with a mention and goes on in its thread. Slack
  redelivers an event its app did not acknowledge (here: as soon as the app is connected again);
  an acknowledged event is never sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tests.fakes.discord_api import BOT_ID as DISCORD_BOT_ID
from tests.fakes.discord_api import Failure, FakeDiscord
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, BOT_USER, SIGNING_SECRET, TEAM, SlackFake
from tests.fakes.telegram_api import BOT_ID, TOKEN, Call, FakeBotApi

__all__ = ["DiscordChaos", "SlackChaos", "TelegramChaos", "platform"]


def _short(text: str) -> str:
    return text if len(text) < 90 else f"{text[:40]} ... {text[-40:]}"


class _Storm:
    def __init__(self) -> None:
        self.rate = 0.0
        self.rng = random.Random(0)

    def set(self, rate: float, rng: random.Random) -> None:
        self.rate, self.rng = rate, rng

    def strikes(self) -> bool:
        return self.rate > 0 and self.rng.random() < self.rate


class TelegramChaos:
    name = "telegram"

    def __init__(self, api: FakeBotApi) -> None:
        self.api = api
        self.users = [4242 + i for i in range(5)]
        self.chats: list[tuple[int, int, bool]] = []  # (chat, who writes, a group?)
        for i, user in enumerate(self.users):
            if i < 3:
                self.chats.append((api.private(user), user, False))
            else:
                api.user(user)
                self.chats.append((api.group(-1001000000000 - i, f"Team {i}"), user, True))
        self._storm = _Storm()
        api.on_request.append(self._maybe_429)

    def settings(self) -> dict[str, Any]:
        return {"enabled": True, "allowed_user_ids": self.users, "api_base_url": self.api.url, "poll_timeout_s": 1}

    def env(self) -> dict[str, str]:
        return {"TELEGRAM_BOT_TOKEN": TOKEN}

    async def write(self, conversation: int, text: str) -> None:
        chat, user, group = self.chats[conversation % len(self.chats)]
        self.api.say(chat, f"@relay_bot {text}" if group else text, user=user)

    def shown(self) -> list[str]:
        return [str(m.get("text") or m.get("caption") or "") for _, m in sorted(self.api.messages.items())
                if m["from"]["id"] == BOT_ID]

    def storm(self, rate: float, rng: random.Random) -> None:
        self._storm.set(rate, rng)

    def _maybe_429(self, call: Call) -> None:
        if call.method in ("sendMessage", "editMessageText", "sendMessageDraft") and self._storm.strikes():
            self.api.fail_next(call.method, 429, "Too Many Requests: retry after 1", retry_after=1)

    async def relay_up(self) -> None:
        """Telegram keeps the updates until a poll confirms them: nothing to do."""
        self._polls = len(self.api.calls("getUpdates"))

    async def ready(self) -> None:
        while len(self.api.calls("getUpdates")) <= self._polls:
            await asyncio.sleep(0.05)

    def fate(self, marker: str) -> str:
        return "still waiting to be confirmed" if any(marker in str(u) for u in self.api.pending_updates) else ""

    def calls(self) -> list[dict[str, Any]]:
        def message_id(call: Call) -> Any:
            result = call.result if isinstance(call.result, dict) else {}
            return call.params.get("message_id") or result.get("message_id")

        return [{"at": c.at, "method": c.method, "chat": c.params.get("chat_id"), "status": c.status,
                 "id": message_id(c), "text": _short(str(c.params.get("text", "")))}
                for c in self.api.events if c.method != "getUpdates"]

    def unheard(self, kills: Sequence[float], window_s: float) -> list[str]:
        """Telegram takes no idempotency key for a new message: see ``Platform.unheard``."""
        events = list(self.api.events)
        named = {(str(c.params.get("chat_id")), str(c.params["message_id"]))
                 for c in events if "message_id" in c.params}
        made = [(c.at, (str(c.params.get("chat_id")), str(c.result["message_id"]))) for c in events
                if c.method == "sendMessage" and c.status == 200 and isinstance(c.result, dict)
                and "message_id" in c.result]
        orphans = {key for at, key in made if key not in named and any(0 <= kill - at < window_s for kill in kills)}
        return [str(m.get("text") or "") for (chat, mid), m in sorted(self.api.messages.items())
                if (str(chat), str(mid)) in orphans]


class DiscordChaos:
    name = "discord"

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.users = [111_000_000_000_000_101 + i for i in range(5)]
        self.channel = next(iter(fake.channels))
        self.dms = {i: fake.dm(user) for i, user in enumerate(self.users) if i}
        self.mention: int | None = None  # the latest mention in the channel (conversation 0)
        self._storm = _Storm()
        fake.on_request.append(self._maybe_429)

    def settings(self) -> dict[str, Any]:
        return {"enabled": True, "allowed_user_ids": self.users, "allowed_channel_ids": [self.channel],
                "api_base_url": self.fake.api_base, "gateway_url": self.fake.gateway_url}

    def env(self) -> dict[str, str]:
        return {"DISCORD_BOT_TOKEN": self.fake.token}

    async def write(self, conversation: int, text: str) -> None:
        conversation %= len(self.users)
        user = self.users[conversation]
        if conversation:
            await self.fake.say(self.dms[conversation], user, text)
            return
        thread = self.fake.thread_for(self.mention) if self.mention is not None else None
        if thread is not None:
            await self.fake.say(thread.id, user, text)
        else:  # no thread (yet): the person mentions the bot again
            self.mention = await self.fake.say(self.channel, user, text, mention=True)

    def shown(self) -> list[str]:
        return [str(m["content"]) for ch in list(self.fake.channels.values()) for m in list(ch.messages.values())
                if m["author"]["id"] == str(DISCORD_BOT_ID)]

    def storm(self, rate: float, rng: random.Random) -> None:
        self._storm.set(rate, rng)

    def _maybe_429(self, method: str, path: str, body: dict[str, Any]) -> None:
        parts = path.strip("/").split("/")
        if parts[0] != "channels" or parts[-1] in ("typing", "threads") or method not in ("POST", "PATCH"):
            return
        if self._storm.strikes():
            self.fake.fail_next("send" if method == "POST" else "edit", Failure(429, retry_after=1.0))

    async def relay_up(self) -> None:
        """Discord keeps the messages; the relay catches up from the history."""
        self._identifies = self.fake.identifies

    async def ready(self) -> None:
        while self.fake.identifies <= self._identifies:
            await asyncio.sleep(0.05)
        await self.fake.connected(60)

    def fate(self, marker: str) -> str:
        return ""  # Discord keeps every message in the channel's history

    def calls(self) -> list[dict[str, Any]]:
        return [{"method": m, "path": p, "text": _short(str(b.get("content", "") if isinstance(b, dict) else b))}
                for m, p, b in self.fake.calls]

    def unheard(self, kills: Sequence[float], window_s: float) -> list[str]:
        """None: each piece is posted with a nonce Discord enforces, so the relay finds it again."""
        return []


class SlackChaos:
    name = "slack"

    def __init__(self, fake: SlackFake) -> None:
        self.fake = fake
        self.users = [f"U0CHAOS{i}" for i in range(5)]
        self.channels = [f"C0CHAOS{i}" for i in range(5)]
        self.threads: dict[int, str] = {}
        self.pending: list[tuple[dict[str, Any], int]] = []  # (event envelope, retry attempt)
        self.acked: list[tuple[str, int]] = []  # (event text, the attempt that was acknowledged)
        self._storm = _Storm()
        self._wake = asyncio.Event()
        fake.on_request.append(self._maybe_429)

    @contextlib.asynccontextmanager
    async def delivering(self) -> AsyncIterator[SlackChaos]:
        task = asyncio.create_task(self._deliver(), name="chaos-slack-events")
        try:
            yield self
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def settings(self) -> dict[str, Any]:
        return {"enabled": True, "api_base_url": self.fake.api_url, "allowed_user_ids": self.users}

    def env(self) -> dict[str, str]:
        return {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET}

    async def write(self, conversation: int, text: str) -> None:
        conversation %= len(self.users)
        user, channel = self.users[conversation], self.channels[conversation]
        thread = self.threads.get(conversation)
        if thread is None:
            msg = self.fake.user_message(user, channel, f"<@{BOT_USER}> {text}")
            self.threads[conversation] = msg.ts
            base = {"user": user, "text": msg.text, "ts": msg.ts, "channel": channel, "team": TEAM, "event_ts": msg.ts}
            self._queue({"type": "app_mention", **base})
            self._queue({"type": "message", "channel_type": "channel", **base})
        else:
            msg = self.fake.user_message(user, channel, text, thread)
            self._queue({"type": "message", "channel_type": "channel", "user": user, "text": text, "ts": msg.ts,
                         "thread_ts": thread, "channel": channel, "team": TEAM, "event_ts": msg.ts})

    def _queue(self, event: dict[str, Any]) -> None:
        self.pending.append((self.fake.event_envelope(event), 0))
        self._wake.set()

    async def _deliver(self) -> None:
        """Slack's side: push each event, in order, until the app acknowledges it."""
        while True:
            if not self.pending or not self.fake.connected:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.2):
                        await self._wake.wait()
                continue
            envelope, attempt = self.pending[0]
            try:
                await self.fake.push(envelope, retry_attempt=attempt, timeout=3.0)
            except (TimeoutError, AssertionError, ConnectionError, RuntimeError):
                self.pending[0] = (envelope, attempt + 1)  # not acknowledged: Slack sends it again
                await asyncio.sleep(0.2)
                continue
            self.pending.pop(0)
            self.acked.append((str(envelope.get("event", {}).get("text", "")), attempt))

    def shown(self) -> list[str]:
        return [m.shown for m in list(self.fake.messages)
                if m.user == BOT_USER and not m.deleted and m.ephemeral_to is None]

    def storm(self, rate: float, rng: random.Random) -> None:
        self._storm.set(rate, rng)

    def _maybe_429(self, method: str, params: dict[str, Any]) -> None:
        if method in ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream",
                      "chat.stopStream") and self._storm.strikes():
            self.fake.fail_next(method, "ratelimited", status=429, retry_after=1)

    async def relay_up(self) -> None:
        self._connections = self.fake.connections
        self._wake.set()

    async def ready(self) -> None:
        await self.fake.wait_connected(self._connections + 1, timeout=60)

    def fate(self, marker: str) -> str:
        acked = [attempt for text, attempt in self.acked if marker in text]
        if acked:
            return f"Slack had the relay's acknowledgement (delivery attempt {acked[0] + 1})"
        return "never acknowledged" if any(marker in str(e) for e, _ in self.pending) else ""

    def calls(self) -> list[dict[str, Any]]:
        return [{"method": m, "ts": p.get("ts"), "text": _short(str(p.get("markdown_text") or p.get("blocks") or ""))}
                for m, p in self.fake.calls]

    def unheard(self, kills: Sequence[float], window_s: float) -> list[str]:
        """None: the relay notes a post before it makes it and reads the thread back after a restart."""
        return []


@contextlib.asynccontextmanager
async def platform(name: str) -> AsyncIterator[TelegramChaos | DiscordChaos | SlackChaos]:
    """The fake of ``name`` started, wrapped for the harness."""
    async with contextlib.AsyncExitStack() as stack:
        if name == "telegram":
            api = await FakeBotApi().start()
            stack.push_async_callback(api.close)
            yield TelegramChaos(api)
        elif name == "discord":
            fake = await FakeDiscord().start()
            stack.push_async_callback(fake.close)
            yield DiscordChaos(fake)
        elif name == "slack":
            slack = await stack.enter_async_context(SlackFake())
            yield await stack.enter_async_context(SlackChaos(slack).delivering())
        else:
            raise ValueError(f"no chaos for {name!r}")
