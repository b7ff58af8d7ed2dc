"""The registry of surfaces: every ``SurfacePlugin`` installed under the entry-point group
``acp_relay.surfaces`` (the four built-ins are registered there too, in acp-relay's own metadata).

This is the one list of surfaces: config validation, ``run``, ``check-config``, ``doctor`` and the
tests all read it, so a surface cannot be known to one and forgotten by another. Loading a plugin
imports only its plugin module, never its SDK; ``require_sdk`` imports the SDK modules a plugin
names, so a missing extra is one sentence instead of an ImportError deep inside ``launch``.
"""

from __future__ import annotations

import functools
import importlib
import logging
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any

from core.engine.surface import StartupError
from core.plugin import SurfacePlugin

__all__ = ["ENTRY_POINT_GROUP", "missing_extra_text", "plugin", "registered", "require_sdk"]

log = logging.getLogger("acp_relay.loading")

ENTRY_POINT_GROUP = "acp_relay.surfaces"


@functools.cache
def registered() -> MappingProxyType[str, SurfacePlugin[Any]]:
    """Every installed surface by name, sorted by name (the order they start in). A plugin that cannot
    be loaded, or is not a ``SurfacePlugin`` under its own name, is logged and left out."""
    found: dict[str, SurfacePlugin[Any]] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
        except Exception as exc:  # a broken third-party package must not stop the others
            log.warning("the surface plugin %s (%s) could not be loaded: %r", point.name, point.value, exc)
            continue
        if not isinstance(loaded, SurfacePlugin) or loaded.name != point.name:
            log.warning("the entry point %s (%s) is not a SurfacePlugin named %r; ignored", point.name,
                        point.value, point.name)
            continue
        if point.name in found:
            log.warning("two packages register a surface named %r; the first one found is used", point.name)
            continue
        found[point.name] = loaded
    return MappingProxyType(dict(sorted(found.items())))


def plugin(name: str) -> SurfacePlugin[Any]:
    """The surface registered as ``name``; ``StartupError`` naming the installed ones otherwise."""
    try:
        return registered()[name]
    except KeyError:
        raise StartupError(f"no {name} surface is installed (installed: {', '.join(registered())})") from None


def missing_extra_text(plugin: SurfacePlugin[Any], missing: str) -> str:
    """One sentence: the surface cannot run without ``missing``, and what installs it."""
    if plugin.extra:
        return (f"the {plugin.name} surface needs {missing}, which is not installed: "
                f"pip install 'acp-relay[{plugin.extra}]'")
    return f"the {plugin.name} surface cannot be loaded: {missing} is not installed"


def require_sdk(plugin: SurfacePlugin[Any]) -> None:
    """Import the SDK modules ``plugin`` names; ``StartupError`` (the extra to install) when one is missing."""
    for module in plugin.sdk_modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise StartupError(missing_extra_text(plugin, exc.name or module)) from exc
