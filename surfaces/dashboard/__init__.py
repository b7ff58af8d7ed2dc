"""The local web dashboard, the embedded default surface: ``launch`` starts it for ``acp-relay run``.

Each browser tab is one conversation. The page is plain HTML, CSS and JavaScript from ``static/``
(Markdown rendered by the vendored ``marked``, sanitised by ``DOMPurify``); see ``server`` for the
security rules and ``auth`` for the login (a token always, one-time links, server-side sessions).

Agent text never becomes a control: the sanitiser drops form elements (buttons, inputs, ...) and
class, id, style and data-* attributes, and only the buttons the page builds from a message's
``buttons`` are approval buttons. Each message reaches the page as typed blocks (``render``): the
core's tool lines, plan, refusal card and footer are drawn from their fields, so the same words
written by the agent are plain agent text.

The page draws its own icons (inline SVG) where the core's tool lines and footer have emoji, which
a browser without an emoji font shows as empty boxes: a block says its status, not its glyph.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from core.config import RelayConfig, secret
from core.engine.surface import StartupError
from core.redact import SecretRegistration, register_secrets
from surfaces.dashboard import wording
from surfaces.dashboard.auth import LINK_TTL_S, Auth
from surfaces.dashboard.errors import BindFailed
from surfaces.dashboard.server import AUTH, check_bind, create_app, is_loopback
from surfaces.dashboard.surface import DashboardSurface
from surfaces.dashboard.transcript import Transcript

if TYPE_CHECKING:
    from core.engine.engine import Engine

__all__ = ["Dashboard", "DashboardSurface", "check", "check_bind", "create_app", "launch", "transcript_path"]


def transcript_path(store_path: str) -> str:
    """The transcript database, next to the relay's store (``relay.db`` -> ``relay-dashboard.db``)."""
    if store_path == ":memory:":
        return store_path
    store = Path(store_path).expanduser()
    return str(store.with_name(f"{store.stem}-dashboard.db"))


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


def check(config: RelayConfig) -> list[tuple[str, str]]:
    """Problems ``launch`` would refuse to start with, as (JSON path, sentence), for check-config."""
    settings = config.surfaces.dashboard
    try:
        check_bind(settings.host, secret(settings.access_token_env), token_env=settings.access_token_env)
    except StartupError as exc:
        return [("surfaces.dashboard.host", str(exc))]
    return []


async def launch(engine: Engine, config: RelayConfig, *, announce: bool = True) -> Dashboard:
    """Serve the dashboard on ``surfaces.dashboard.host``/``port`` and attach it to ``engine``; with
    ``announce``, print its address and a one-time login link (the link alone on its line).

    Without a token in ``access_token_env`` (allowed on loopback only) one is made for this run; it is
    registered for redaction by value until ``close``. Raises a ``StartupError`` (the relay prints it
    as one line and exits 2) when the bind is not loopback and no access token is configured, when the
    token is too short (see ``check_bind``), or when the address is taken (``BindFailed``).
    """
    settings = config.surfaces.dashboard
    token = check_bind(settings.host, secret(settings.access_token_env), token_env=settings.access_token_env)
    surface = DashboardSurface(Transcript.open(transcript_path(config.store.path),
                                                    max_tabs=settings.max_tabs))
    engine.attach(surface, settings.allowed_user_ids)
    served: list[str] = []  # the address, once bound (a new link is printed with it)

    def print_link(path: str) -> None:
        if announce and served:
            print(wording.login_link_text(served[0].rstrip("/") + path, minutes=round(LINK_TTL_S / 60)),
                  file=sys.stderr, flush=True)

    app = create_app(surface, engine, access_token=token, trust_forwarded_proto=settings.trust_forwarded_proto,
                     announce=print_link)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=5.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.host or None, settings.port).start()
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
