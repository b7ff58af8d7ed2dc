"""Why the dashboard refuses to start, as fields; the sentence comes from ``surfaces.dashboard.wording``.

Each is a ``StartupError``: ``acp-relay run`` prints ``str(error)`` as one line and exits 2, and
check-config reports it against ``surfaces.dashboard.host``.
"""

from __future__ import annotations

import errno

from core.surface_api import StartupError
from surfaces.dashboard.wording import bind_failure_text, no_token_text, weak_token_text

__all__ = ["BindFailed", "TokenMissing", "WeakToken"]


class TokenMissing(StartupError):
    """The bind is not loopback and no access token is set: anyone who can reach it could run the agent."""

    def __init__(self, host: str, token_env: str) -> None:
        super().__init__(no_token_text(host, token_env))
        self.host, self.token_env = host, token_env


class WeakToken(StartupError):
    """The access token, ``length`` characters once stripped, is shorter than ``minimum``."""

    def __init__(self, token_env: str, length: int, minimum: int, *, loopback: bool) -> None:
        super().__init__(weak_token_text(token_env, length, minimum, loopback=loopback))
        self.token_env, self.length, self.minimum, self.loopback = token_env, length, minimum, loopback


class BindFailed(StartupError):
    """Serving on ``host``:``port`` failed with ``os_errno`` (e.g. ``EADDRINUSE``)."""

    def __init__(self, host: str, port: int, os_errno: int | None, reason: str) -> None:
        where = f"[{host}]:{port}" if ":" in host else f"{host or '0.0.0.0'}:{port}"
        super().__init__(bind_failure_text(where, in_use=os_errno == errno.EADDRINUSE,
                                           denied=os_errno == errno.EACCES, reason=reason))
        self.host, self.port, self.os_errno, self.reason = host, port, os_errno, reason
