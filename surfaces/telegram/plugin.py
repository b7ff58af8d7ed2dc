"""The Telegram surface as a plugin: its config model, its extra and SDK, and its entry points.

Importing this module imports no SDK: ``launch`` and ``doctor`` load ``launching`` (and with it
python-telegram-bot) only when called.
"""

from __future__ import annotations

from core.surface_api import Host, Launched, SurfacePlugin
from surfaces.telegram.settings import TelegramConfig, check

__all__ = ["PLUGIN"]


async def _launch(host: Host, settings: TelegramConfig) -> Launched:
    from surfaces.telegram.launching import launch

    return await launch(host, settings)


async def _doctor(settings: TelegramConfig) -> list[tuple[bool, str]]:
    from surfaces.telegram.launching import doctor

    return await doctor(settings)


PLUGIN = SurfacePlugin(
    name="telegram", settings=TelegramConfig, launch=_launch, check=check, doctor=_doctor, extra="telegram",
    sdk_modules=("telegram", "telegramify_markdown", "pyromark"))
