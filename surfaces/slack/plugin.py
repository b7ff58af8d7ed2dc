"""The Slack surface as a plugin: its config model, its extra and SDK, and its entry points.

Importing this module imports no SDK: ``launch`` and ``doctor`` load ``launching`` (and with it
slack-bolt and slack-sdk) only when called.
"""

from __future__ import annotations

from core.surface_api import Host, Launched, SurfacePlugin
from surfaces.slack.options import problems
from surfaces.slack.settings import SlackConfig

__all__ = ["PLUGIN"]


async def _launch(host: Host, settings: SlackConfig) -> Launched:
    from surfaces.slack.launching import launch

    return await launch(host, settings)


async def _doctor(settings: SlackConfig) -> list[tuple[bool, str]]:
    from surfaces.slack.launching import doctor

    return await doctor(settings)


PLUGIN = SurfacePlugin(name="slack", settings=SlackConfig, launch=_launch, check=problems, doctor=_doctor,
                       extra="slack", sdk_modules=("slack_bolt", "slack_sdk"))
