"""Several ``acp-relay run`` processes on one PostgreSQL database, one of them killed with SIGKILL
midway, while people write in Slack threads (Socket Mode: the fake spreads the events over the
relays' connections) and Telegram chats (webhook mode: the fake posts to a round-robin proxy in
front of the relays' webhook servers).

Each relay's fake agent logs when each turn starts and ends (``--turn-log``, one file per relay), so
the test can tell which relay answered what, and when: two relays must never run turns of the same
conversation at the same time, and the dead relay's conversations must go on elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.chaos.harness import CLI, FOOTER, ROOT
from tests.chaos.platforms import SlackChaos, TelegramChaos
from tests.conftest import FAKE_AGENT_PATH
from tests.waiting import until

__all__ = ["Cluster", "RoundRobin", "Turn", "background", "free_port", "overlaps", "owners", "shown_counts",
           "telegram_pushing"]

WEBHOOK_SECRET = "relay-webhook-secret"
DATABASE_ENV = "ACP_RELAY_DATABASE_URL"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RoundRobin:
    """A small load balancer: each request goes to the next backend; a backend that does not answer
    (a dead relay) is passed over for the next, as a load balancer's health check would."""

    def __init__(self, backends: list[str]) -> None:
        self.backends = backends
        self.port = free_port()
        self.sent: list[str] = []  # the backend each request went to
        self._turn = itertools.count()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> RoundRobin:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._session is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        for _ in range(len(self.backends)):
            backend = self.backends[next(self._turn) % len(self.backends)]
            try:
                async with self._session.request(request.method, backend + request.path_qs, data=body,
                                                 headers=headers) as answer:
                    self.sent.append(backend)
                    return web.Response(status=answer.status, body=await answer.read())
            except (aiohttp.ClientError, OSError):
                continue
        return web.Response(status=502, text="no relay answered")


@dataclass(frozen=True)
class Turn:
    """One prompt turn of one relay's agent: which answer, when it started and ended (None: never)."""

    relay: int
    n: int
    start: float
    end: float | None


@dataclass
class Cluster:
    """``count`` relays with one config each (the same but for the ports and the name). Telegram in
    webhook mode (``telegram_mode``: or polling), Slack in Socket Mode (``slack_mode``: or HTTP mode on
    ``slack_ports``); a platform given as None is not enabled."""

    tmp: Path
    url: str
    slack: SlackChaos | None
    telegram: TelegramChaos | None
    count: int = 3
    lease_s: float = 3.0
    telegram_mode: str = "webhook"
    slack_mode: str = "socket"
    procs: list[asyncio.subprocess.Process | None] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    slack_ports: list[int] = field(default_factory=list)
    killed: dict[int, float] = field(default_factory=dict)  # relay -> when

    def __post_init__(self) -> None:
        self.ports = [free_port() for _ in range(self.count)]
        self.slack_ports = [free_port() for _ in range(self.count)]
        self.procs = [None] * self.count
        (self.tmp / "work").mkdir(exist_ok=True)

    def config(self, i: int, webhook_url: str) -> Path:
        args = [str(FAKE_AGENT_PATH), "--state-dir", str(self.tmp / "agent-state"),
                "--turn-log", str(self.turn_log(i))]
        telegram: dict[str, Any] = {"enabled": False}
        if self.telegram is not None:
            telegram = {**self.telegram.settings(), "mode": self.telegram_mode}
            if self.telegram_mode == "webhook":
                telegram.update(webhook_url=webhook_url, webhook_host="127.0.0.1", webhook_port=self.ports[i])
        slack: dict[str, Any] = {"enabled": False}
        if self.slack is not None:
            slack = {**self.slack.settings(), "mode": self.slack_mode}
            if self.slack_mode == "http":
                slack["http_port"] = self.slack_ports[i]
        config = {"agents": {"fake": {"command": sys.executable, "args": args, "cwd": str(self.tmp / "work")}},
                  "store": {"path": str(self.tmp / f"relay-{i}" / "relay.db"), "url_env": DATABASE_ENV,
                            "lease_s": self.lease_s, "relay_name": f"relay-{i}"},
                  "engine": {"edit_interval_s": 0.2, "queue_limit": 50},
                  "retry": {"attempts": 2, "budget_s": 1, "base_delay_s": 0.1},
                  "surfaces": {"dashboard": {"enabled": False}, "slack": slack, "telegram": telegram}}
        path = self.tmp / f"config-{i}.json"
        path.write_text(json.dumps(config))
        return path

    async def start_all(self, webhook_url: str = "") -> None:
        """Start every relay, and wait until the platforms hear them (Slack's sockets, the webhook set)."""
        for i in range(self.count):
            await self.start(i, webhook_url)
        if self.slack is not None and self.slack_mode == "socket":
            await self.slack.fake.wait_connected(self.count, timeout=60)
        telegram = self.telegram
        if telegram is not None and self.telegram_mode == "webhook":
            await until(lambda: bool(telegram.api.webhook), "the webhook set", timeout=60)

    def turn_log(self, i: int) -> Path:
        return self.tmp / f"turns-{i}.jsonl"

    async def start(self, i: int, webhook_url: str = "") -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_", "XDG_", "TELEGRAM_", "SLACK_",
                                                                         "DISCORD_"))}
        env.update(HOME=str(self.tmp), XDG_STATE_HOME=str(self.tmp / "state"), PYTHONPATH=str(ROOT),
                   PYTHONUNBUFFERED="1", TELEGRAM_WEBHOOK_SECRET=WEBHOOK_SECRET, **{DATABASE_ENV: self.url},
                   **(self.slack.env() if self.slack is not None else {}),
                   **(self.telegram.env() if self.telegram is not None else {}))
        (self.tmp / f"relay-{i}").mkdir(exist_ok=True)
        with open(self.tmp / f"relay-{i}.log", "wb") as log:
            self.procs[i] = await asyncio.create_subprocess_exec(
                str(CLI), "run", "--config", str(self.config(i, webhook_url)), env=env, cwd=self.tmp,
                stdout=log, stderr=log)

    def log(self, i: int) -> str:
        """Everything relay ``i`` wrote (its log lines; a traceback would be among them)."""
        return (self.tmp / f"relay-{i}.log").read_text(encoding="utf-8", errors="replace")

    async def kill(self, i: int) -> None:
        proc = self.procs[i]
        assert proc is not None
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        self.killed[i] = time.time()  # the agents' turn logs keep the wall clock

    async def stop_all(self) -> list[int | None]:
        codes: list[int | None] = []
        for proc in self.procs:
            if proc is None or proc.returncode is not None:
                codes.append(None if proc is None else proc.returncode)
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(60):
                    codes.append(await proc.wait())
            except TimeoutError:
                proc.kill()
                codes.append(await proc.wait())
        return codes

    def turns(self) -> list[Turn]:
        """Every turn of every relay's agent, from their logs."""
        out: list[Turn] = []
        for i in range(self.count):
            path = self.turn_log(i)
            if not path.exists():
                continue
            started: dict[tuple[str, str], float] = {}
            for line in path.read_text(encoding="utf-8").splitlines():
                entry = json.loads(line)
                if "answer-" not in entry["text"]:
                    continue
                n = int(entry["text"].split("answer-")[1].split()[0])
                key = (entry["session"], entry["text"])
                if entry["event"] == "start":
                    started[key] = entry["at"]
                elif key in started:
                    out.append(Turn(i, n, started.pop(key), entry["at"]))
            out.extend(Turn(i, int(text.split("answer-")[1].split()[0]), at, None)
                       for (_, text), at in started.items())
        return out


def overlaps(turns: list[Turn], killed: dict[int, float], conversations: int) -> list[str]:
    """Turns of one conversation run by two relays at once (a killed relay's unfinished turn ends at
    the kill); answer ``n`` is in conversation ``n % conversations``."""
    found = []
    for c in range(conversations):
        mine = sorted((t for t in turns if t.n % conversations == c), key=lambda t: t.start)
        for before, after in itertools.pairwise(mine):
            end = before.end if before.end is not None else killed.get(before.relay, float("inf"))
            if before.relay != after.relay and after.start < end:
                found.append(f"conversation {c}: relay {before.relay} answer-{before.n} until {end:.3f}, "
                             f"relay {after.relay} answer-{after.n} from {after.start:.3f}")
    return found


def shown_counts(shown: list[str], n: int) -> tuple[int, int]:
    """(copies that begin, complete copies) of answer ``n`` among the bot's messages."""
    begins = sum(f"answer-{n} begins" in text for text in shown)
    complete = sum(f"answer-{n} ends" in text and FOOTER in text for text in shown)
    return begins, complete


@contextlib.asynccontextmanager
async def background(work: Coroutine[Any, Any, None], name: str) -> AsyncIterator[None]:
    """``work`` in a task of its own while the block runs (a platform's side of the test)."""
    task = asyncio.create_task(work, name=name)
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def telegram_pushing(telegram: TelegramChaos) -> contextlib.AbstractAsyncContextManager[None]:
    """Telegram's side of webhook mode: post what is pending to the webhook, again until taken."""

    async def push() -> None:
        while True:
            if telegram.api.webhook and telegram.api.pending_updates:
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    await telegram.api.deliver()
            await asyncio.sleep(0.05)

    return background(push(), "telegram-webhook-pushing")


def owners(rows: list[tuple[Any, ...]]) -> dict[str, str]:
    """conversation key -> relay, from ``SELECT name, owner FROM leases``."""
    return {str(name).removeprefix("conversation:"): str(owner) for name, owner in rows}
