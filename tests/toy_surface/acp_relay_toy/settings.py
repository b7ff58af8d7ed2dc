"""``surfaces.toy`` in config.json."""

from __future__ import annotations

from pydantic import Field

from core.surface_api import SurfaceSettings

__all__ = ["ToySettings"]


class ToySettings(SurfaceSettings):
    """The folder holding ``inbox.jsonl`` and ``outbox.jsonl``, who may talk to the agent, and how
    often the inbox is read."""

    folder: str = "."
    allowed_user_ids: list[str] = Field(default_factory=list)
    poll_s: float = Field(default=0.2, gt=0)
