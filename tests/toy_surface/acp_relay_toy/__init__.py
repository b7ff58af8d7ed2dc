"""The toy surface: a chat platform that is a folder. People write lines into ``inbox.jsonl``; the
relay's messages (each send, edit and delete) are appended to ``outbox.jsonl``.

An inbox line: ``{"id": "1", "chat": "c1", "user": "alice", "text": "hello"}``. An outbox line:
``{"op": "send", "chat": "c1", "id": "3", "text": "...", "reply_to": "1"}`` (``edit`` and
``delete`` name the ``id`` they change). This module is the plugin: it imports no "SDK" (the toy
has none), so ``check-config`` can read its settings without starting anything.
"""

from __future__ import annotations

from pathlib import Path

from acp_relay_toy.settings import ToySettings
from core.surface_api import Host, Launched, Problems, SurfacePlugin

__all__ = ["PLUGIN"]


def check(settings: ToySettings) -> Problems:
    """What ``launch`` would refuse: a folder that does not exist."""
    if not Path(settings.folder).is_dir():
        return [("folder", f"{settings.folder} is not a folder")]
    return []


async def launch(host: Host, settings: ToySettings) -> Launched:
    """Start the toy surface (its receive loop reads the inbox)."""
    from acp_relay_toy.running import start

    return await start(host, settings)


PLUGIN = SurfacePlugin(name="toy", settings=ToySettings, launch=launch, check=check)
