"""Starting the dashboard for ``acp-relay run``: its server, its login and its surface."""

from __future__ import annotations

import asyncio
import socket
import sys

from aiohttp import web

from core.surface_api import LISTEN_BACKLOG, Host, SecretRegistration, StartupError, register_secrets, secret
from surfaces.dashboard import wording
from surfaces.dashboard.auth import LINK_TTL_S, Auth
from surfaces.dashboard.binding import check_bind, is_loopback
from surfaces.dashboard.errors import BindFailed
from surfaces.dashboard.server import AUTH, create_app
from surfaces.dashboard.settings import DashboardConfig
from surfaces.dashboard.shared import SharedTranscript
from surfaces.dashboard.surface import DashboardSurface
from surfaces.dashboard.transcript import Transcript

__all__ = ["Dashboard", "DashboardSurface", "launch"]


class Dashboard:
    """A running dashboard (what ``launch`` returns): its address, its login, and ``close()``."""

    def __init__(self, runner: web.AppRunner, surface: DashboardSurface, url: str, auth: Auth,
                 secrets: SecretRegistration) -> None:
        self.runner = runner
        self.surface = surface
        self.url = url
        self.auth = auth
        self._secrets = secrets
        #: The one-time login link printed at start.
        self.login_url = self.new_login_url()

    def new_login_url(self) -> str:
        """Another one-time login link (tests, and the login page's "print a new link")."""
        return f"{self.url}login?code={self.auth.new_link()}"

    async def stop_receiving(self) -> None:
        """Nothing to stop: what a browser posts while the relay shuts down is journaled by the engine
        and answered after the next start, and the event streams stay open for the final answers."""

    async def fatal(self) -> StartupError:
        """The dashboard has no connection that can fail for good once it is serving."""
        never: asyncio.Future[StartupError] = asyncio.get_running_loop().create_future()
        return await never

    async def close(self) -> None:
        """End the event streams, stop serving, close the transcript."""
        self.surface.close()
        await self.runner.cleanup()
        self.surface.transcript.close()
        self._secrets.release()


def _url(host: str, port: int) -> str:
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


async def launch(host: Host, settings: DashboardConfig, *, announce: bool = True) -> Dashboard:
    """Serve the dashboard on ``surfaces.dashboard.host``/``port`` and attach it to ``host``; with
    ``announce``, print its address and a one-time login link (the link alone on its line).

    Without a token in ``access_token_env`` (allowed on loopback only) one is made for this run; it is
    registered for redaction by value until ``close``. Raises a ``StartupError`` (the relay prints it
    as one line and exits 2) when the bind is not loopback and no access token is configured, when the
    token is too short (see ``check_bind``), or when the address is taken (``BindFailed``).
    """
    token = check_bind(settings.host, secret(settings.access_token_env), token_env=settings.access_token_env)
    if host.shared:  # every relay's tabs show every conversation: the transcripts are in the shared store
        surface = DashboardSurface(SharedTranscript(host.state, settings.max_tabs), host.broadcast)
        host.on_broadcast(surface.on_shared, surface.resync)
    else:  # the transcripts sit beside the relay's store: relay.db -> relay-dashboard.db
        surface = DashboardSurface(Transcript.open(host.data_path(), max_tabs=settings.max_tabs))
    host.attach(surface, settings.allowed_user_ids)
    served: list[str] = []  # the address, once bound (a new link is printed with it)

    def print_link(path: str) -> None:
        if announce and served:
            print(wording.login_link_text(served[0].rstrip("/") + path, minutes=round(LINK_TTL_S / 60)),
                  file=sys.stderr, flush=True)

    app = create_app(surface, host, access_token=token, trust_forwarded_proto=settings.trust_forwarded_proto,
                     announce=print_link)
    # A browser that went away cancels its request: its event stream ends at once, not at the next
    # keep-alive (``server.finish_when_gone`` lets every other request finish).
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=5.0, handler_cancellation=True)
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.host or None, settings.port, backlog=LISTEN_BACKLOG).start()
    except OSError as exc:
        await runner.cleanup()
        surface.transcript.close()
        raise BindFailed(settings.host, settings.port, exc.errno, exc.strerror or type(exc).__name__) from None
    served.append(_url(settings.host, int(runner.addresses[0][1])))
    dashboard = Dashboard(runner, surface, served[0], app[AUTH], register_secrets([app[AUTH].access_token]))
    if announce:
        print(wording.dashboard_at_text(dashboard.url, public=not is_loopback(settings.host)), file=sys.stderr,
              flush=True)
        print_link(dashboard.login_url.removeprefix(dashboard.url.rstrip("/")))
    return dashboard
