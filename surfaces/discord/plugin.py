"""The Discord surface as a plugin: its config model, its extra and SDK, and its entry points.

Importing this module imports no SDK: ``launch`` and ``doctor`` load ``launching`` (and with it
discord.py) only when called.
"""

from __future__ import annotations

from core.surface_api import Host, Launched, SurfacePlugin
from surfaces.discord.settings import DiscordConfig, check

__all__ = ["PLUGIN"]


async def _launch(host: Host, settings: DiscordConfig) -> Launched:
    from surfaces.discord.launching import launch

    return await launch(host, settings)


async def _doctor(settings: DiscordConfig) -> list[tuple[bool, str]]:
    from surfaces.discord.launching import doctor

    return await doctor(settings)


PLUGIN = SurfacePlugin(name="discord", settings=DiscordConfig, launch=_launch, check=check, doctor=_doctor,
                       extra="discord", sdk_modules=("discord",))
