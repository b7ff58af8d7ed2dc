"""The dashboard's config model (``surfaces.dashboard``) and what ``launch`` would refuse."""

from __future__ import annotations

from pydantic import Field

from core.surface_api import Problems, StartupError, SurfaceSettings, secret
from surfaces.dashboard.binding import check_bind

__all__ = ["DashboardConfig", "check"]


class DashboardConfig(SurfaceSettings):
    """Local web dashboard; port 0 binds an ephemeral port (tests). The one surface enabled by default.

    ``trust_forwarded_proto`` (beyond the contract): believe a reverse proxy's ``X-Forwarded-Proto:
    https`` (the session cookie is then ``Secure``); leave it false unless such a proxy fronts the
    dashboard, as anyone can send the header.
    """

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)
    access_token_env: str = "ACP_RELAY_DASHBOARD_TOKEN"
    allowed_user_ids: list[str] = Field(default_factory=lambda: ["local"])
    #: Tabs whose transcripts are kept; past it, the least recently used tab's is deleted.
    max_tabs: int = Field(default=100, ge=1)
    trust_forwarded_proto: bool = False


def check(settings: DashboardConfig) -> Problems:
    """Problems ``launch`` would refuse to start with, as (path in the section, sentence)."""
    try:
        check_bind(settings.host, secret(settings.access_token_env), token_env=settings.access_token_env)
    except StartupError as exc:
        return [("host", str(exc))]
    return []
