"""The dashboard as a plugin: its config model and its entry points (aiohttp comes with acp-relay itself)."""

from __future__ import annotations

from core.surface_api import Host, Launched, SurfacePlugin
from surfaces.dashboard.settings import DashboardConfig, check

__all__ = ["PLUGIN"]


async def _launch(host: Host, settings: DashboardConfig) -> Launched:
    from surfaces.dashboard.launching import launch

    return await launch(host, settings)


PLUGIN = SurfacePlugin(name="dashboard", settings=DashboardConfig, launch=_launch, check=check)
