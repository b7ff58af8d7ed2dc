"""A running toy surface: its receive loop reads new inbox lines and hands each over to the core.

Nothing is lost to a crash: the inbox position is saved (``host.state``) only after ``host.submit``
returned, i.e. once the core has journaled the message; a line read again after a restart is a
redelivery the core recognises by its id.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from acp_relay_toy.settings import ToySettings
from acp_relay_toy.surface import ToySurface
from core.surface_api import Host, InboundMessage, Receiver, StartupError

__all__ = ["ToyRelay", "start"]

log = logging.getLogger("acp_relay_toy")


class ToyRelay:
    """What ``launch`` returns: the relay stops, watches and closes the surface through it."""

    def __init__(self, host: Host, settings: ToySettings) -> None:
        self.host = host
        self.inbox = Path(settings.folder) / "inbox.jsonl"
        self.poll_s = settings.poll_s
        self.receiver: Receiver = host.receiver(self._receive)

    async def _receive(self) -> None:
        """Read the inbox from the saved position, for as long as the relay runs."""
        while True:
            position = int(self.host.state.get("position") or 0)
            if self.inbox.exists():
                with self.inbox.open("rb") as inbox:
                    inbox.seek(position)
                    while (line := inbox.readline()).endswith(b"\n"):  # a line still being written waits
                        await self._take(line)
                        position += len(line)
                        self.host.state.set("position", str(position))
            await asyncio.sleep(self.poll_s)

    async def _take(self, line: bytes) -> None:
        try:
            entry = json.loads(line)
            message = InboundMessage("toy", f"toy:{entry['chat']}", str(entry["user"]), str(entry["text"]),
                                     str(entry["id"]))
        except (ValueError, KeyError, TypeError) as exc:  # never the line's text in the log
            log.warning("skipped an inbox line that is not a message (%s)", type(exc).__name__)
            return
        await self.host.submit(message)  # journaled when this returns: the position may move past it

    async def stop_receiving(self) -> None:
        """Read no more lines (what is written meanwhile is read after the next start)."""
        await self.receiver.stop()

    async def fatal(self) -> StartupError:
        """Returns only if the receive loop fails for good."""
        return await self.receiver.fatal()

    async def close(self) -> None:
        """Nothing else to close: the outbox is written line by line."""
        await self.stop_receiving()


async def start(host: Host, settings: ToySettings) -> ToyRelay:
    """Attach the toy surface and start reading the inbox."""
    if not Path(settings.folder).is_dir():
        raise StartupError(f"{settings.folder} is not a folder (surfaces.toy.folder)")
    host.attach(ToySurface(Path(settings.folder)), settings.allowed_user_ids)
    relay = ToyRelay(host, settings)
    relay.receiver.start()
    return relay
