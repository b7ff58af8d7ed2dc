"""Bot API calls per streamed reply, and the latency to the first visible text, on Telegram.

The relay runs in-process as ``acp-relay run`` builds it (engine, real PTB Application, the
scripted fake ACP agent as a subprocess) against the fake Bot API server on 127.0.0.1, with real
time and Telegram's real paces (a private chat one call a second, a group twenty a minute). One
reply streams ``--chunks`` chunks over about ``--seconds``. The baseline in the same run is a naive
bot on the same PTB bot class and the same agent process: it polls, prompts, and sends one Bot API
call per chunk (a message, then an edit per chunk), as soon as the chunk arrives.

Latency is measured at the fake server: from the moment it hands the update over (its getUpdates
answer) to the first call that puts text on the screen (a draft, a message or an edit).

    python -m bench.bench_telegram [--chunks 60] [--seconds 1.5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from telegram import Bot

from core.acp.types import AcpEvent, TextChunk
from core.config import RelayConfig
from core.lifecycle import Lifecycle
from core.store import Store
from tests.conftest import FAKE_AGENT_PATH
from tests.fakes.telegram_api import TOKEN, Call, FakeBotApi

__all__ = ["main"]

USER, GROUP = 4242, -1001234567890
TEXT_CALLS = ("sendMessageDraft", "sendMessage", "editMessageText")


def script(chunks: int, seconds: float) -> str:
    pause = seconds / chunks
    return "\n".join(f"text  w{i}\nsleep {pause:.4f}" for i in range(chunks))


class Watch:
    """Timestamps at the fake: when an update was handed over, and the text calls after it."""

    def __init__(self, api: FakeBotApi) -> None:
        self.api = api
        self.handed: dict[tuple[int, int], float] = {}  # (chat, message) -> when getUpdates returned it
        api.on_call.append(self._seen)

    def _seen(self, call: Call) -> None:
        if call.method == "getUpdates":
            for update in call.result or []:
                msg = update.get("message")
                if msg is not None:
                    self.handed.setdefault((msg["chat"]["id"], msg["message_id"]), time.monotonic())

    def turn(self, chat: int, message_id: int, since: int) -> tuple[float, int]:
        """(seconds from hand-over to the first text call, text calls) for one reply."""
        calls = [c for c in self.api.events[since:] if c.method in TEXT_CALLS and c.params.get("chat_id") == chat]
        return calls[0].at - self.handed[(chat, message_id)], len(calls)


async def until(pred: Any, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError("the benchmark's turn never finished")
        await asyncio.sleep(0.005)


async def relay_turn(api: FakeBotApi, watch: Watch, chat: int, text: str, limit_s: float = 60.0) -> tuple[float, int]:
    since = len(api.events)
    said = api.say(chat, text, user=USER)
    await until(lambda: any("⏱" in m["text"] for m in api.bot_messages(chat)
                            if m["message_id"] > said["message_id"]), limit_s)
    return watch.turn(chat, said["message_id"], since)


async def naive_turn(api: FakeBotApi, watch: Watch, bot: Bot, session: Any, text: str, offset: int) -> tuple[
        tuple[float, int], int]:
    since = len(api.events)
    said = api.say(USER, text)
    updates: tuple[Any, ...] = ()
    while not updates:
        updates = await bot.get_updates(offset=offset, timeout=1)
    outbox: asyncio.Queue[str | None] = asyncio.Queue()

    async def sender() -> None:
        shown, message_id = "", None
        while (chunk := await outbox.get()) is not None:
            shown += chunk
            if message_id is None:
                message_id = (await bot.send_message(USER, shown)).message_id
            else:
                await bot.edit_message_text(shown, chat_id=USER, message_id=message_id)

    def on_event(event: AcpEvent) -> None:
        if isinstance(event, TextChunk):
            outbox.put_nowait(event.text)

    task = asyncio.create_task(sender())
    await session.prompt(updates[0].message.text, on_event=on_event)
    outbox.put_nowait(None)
    await task
    return watch.turn(USER, said["message_id"], since), updates[-1].update_id + 1


#: The pause before each measured message (longer than a group's 3 s pace between two calls).
READING_S = 3.0


async def run(chunks: int, seconds: float, rounds: int) -> None:
    os.environ["TELEGRAM_BOT_TOKEN"] = TOKEN
    api = await FakeBotApi().start()
    api.private(USER)
    api.group(GROUP)
    watch = Watch(api)
    with tempfile.TemporaryDirectory() as tmp:
        config = RelayConfig.model_validate({
            "agents": {"fake": {"command": sys.executable, "args": [str(FAKE_AGENT_PATH)], "cwd": tmp}},
            "store": {"path": str(Path(tmp) / "relay.db")},
            "surfaces": {"dashboard": {"enabled": False}, "telegram": {
                "enabled": True, "allowed_user_ids": [USER], "api_base_url": api.url, "poll_timeout_s": 1}}})
        store = Store.open(config.store.path)
        relay = Lifecycle(config, store)
        engine = relay.engine
        await relay.launch("telegram")
        await relay.start()
        body = script(chunks, seconds)
        try:
            await relay_turn(api, watch, USER, "text warm-up")

            async def after_a_pause(chat: int, text: str) -> tuple[float, int]:
                # A person reads the answer before writing again. Back to back, a reply waits for its
                # chat's flood-control pace (which the naive sender ignores, at the risk of a 429).
                await asyncio.sleep(READING_S)
                return await relay_turn(api, watch, chat, text, 60.0 + 2 * seconds)

            private = [await after_a_pause(USER, body) for _ in range(rounds)]
            group = [await after_a_pause(GROUP, f"@relay_bot {body}") for _ in range(rounds)]
            await relay.stop_receiving()
            session = await engine.pool.runtimes()[0].new_session()
            async with Bot(TOKEN, base_url=f"{api.url}/bot") as bot:
                offset = int(store.get_offset("telegram", f"offset:{bot.id}") or 0)
                naive = []
                for _ in range(rounds):
                    measured, offset = await naive_turn(api, watch, bot, session, body, offset)
                    naive.append(measured)
        finally:
            await relay.close()
            await api.close()
    naive_latency = statistics.median(t for t, _ in naive)
    naive_calls = statistics.median(n for _, n in naive)
    for name, turns in (("private chat (drafts)", private), ("group (send + edits)", group)):
        latency = statistics.median(t for t, _ in turns)
        calls = statistics.median(n for _, n in turns)
        print(f"telegram {name}: {calls:.0f} Bot API text calls per {chunks}-chunk reply over {seconds:g} s "
              f"vs {naive_calls:.0f} naive send-per-chunk: {naive_calls / calls:.1f}x fewer")
        print(f"  first visible text {latency * 1000:.0f} ms after Telegram handed over the update, naive "
              f"{naive_latency * 1000:.0f} ms: ratio {latency / naive_latency:.2f} (median of {rounds})")


def main() -> None:
    """Print calls per reply and first-text latency for the relay and the naive baseline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.chunks, args.seconds, args.rounds))


if __name__ == "__main__":
    main()
