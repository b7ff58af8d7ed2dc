"""Finding a surface's package by name, so the core never imports one (``surfaces.<name>``)."""

from __future__ import annotations

import importlib
from types import ModuleType

from core.engine.surface import StartupError

__all__ = ["load_surface", "missing_extra_text"]

#: The surfaces whose libraries come with an extra of the ``acp-relay`` package.
_EXTRAS = frozenset({"telegram", "discord", "slack"})


def missing_extra_text(name: str, exc: ImportError) -> str:
    """One sentence: which extra installs what the ``name`` surface needs."""
    missing = exc.name or "a library it needs"
    if name in _EXTRAS:
        return (f"the {name} surface needs {missing}, which is not installed: "
                f"pip install 'acp-relay[{name}]'")
    return f"the {name} surface cannot be loaded: {missing} is not installed"


def load_surface(name: str) -> ModuleType:
    """``surfaces.<name>``, which must offer ``launch(engine, config)``; else ``StartupError``."""
    try:
        module = importlib.import_module(f"surfaces.{name}")
    except ImportError as exc:
        if (exc.name or "").startswith("surfaces"):
            raise StartupError(f"this version has no {name} surface") from exc
        raise StartupError(missing_extra_text(name, exc)) from exc
    if not hasattr(module, "launch"):
        raise StartupError(f"this version has no {name} surface yet")
    return module
