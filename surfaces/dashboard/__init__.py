"""The local web dashboard, the embedded default surface: ``launch`` starts it for ``acp-relay run``.

Each browser tab is one conversation. The page is plain HTML, CSS and JavaScript from ``static/``
(Markdown rendered by the vendored ``marked``, sanitised by ``DOMPurify``); see ``server`` for the
security rules.

Agent text never becomes a control: the sanitiser drops form elements (buttons, inputs, ...) and
class, id, style and data-* attributes, and only the buttons the page builds from a message's
``buttons`` are approval buttons. The core's footer and refusal card are styled by position only:
the footer is the last top-level block of a message, the card the block just before it (the order
of ``core.engine.document``); the same words anywhere else are plain agent text.

The page draws its own icons (inline SVG) where the core's tool lines and footer have emoji, which
a browser without an emoji font shows as empty boxes; the server puts the core's glyph table
(``core.engine.wording.TOOL_GLYPHS``, ``FOOTER_GLYPH``) into the page, so the two never drift.
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
from surfaces.dashboard import wording
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
    """A running dashboard (what ``launch`` returns): its address and ``close()``."""

    def __init__(self, runner: web.AppRunner, surface: DashboardSurface, url: str,
                 login_url: str | None) -> None:
        self.runner = runner
        self.surface = surface
        self.url = url
        self.login_url = login_url

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
    """Serve the dashboard on ``surfaces.dashboard.host``/``port`` and attach it to ``engine``.

    Raises a ``StartupError`` (the relay prints it as one line and exits 2) when the bind is not loopback
    and no access token is configured, when the token is too short (see ``check_bind``), or when the
    address is taken (``BindFailed``).
    """
    settings = config.surfaces.dashboard
    token = check_bind(settings.host, secret(settings.access_token_env), token_env=settings.access_token_env)
    surface = DashboardSurface(Transcript.open(transcript_path(config.store.path),
                                                    max_tabs=settings.max_tabs))
    engine.attach(surface, settings.allowed_user_ids)
    app = create_app(surface, engine, access_token=token)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=5.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.host or None, settings.port).start()
    except OSError as exc:
        await runner.cleanup()
        surface.transcript.close()
        raise BindFailed(settings.host, settings.port, exc.errno, exc.strerror or type(exc).__name__) from None
    port = int(runner.addresses[0][1])
    url = _url(settings.host, port)
    login_token = app[AUTH].login_token
    login_url = f"{url}login?token={login_token}" if login_token else None
    if announce:
        print(wording.dashboard_at_text(url, public=not is_loopback(settings.host)), file=sys.stderr, flush=True)
        if login_url:
            print(wording.login_link_text(login_url), file=sys.stderr, flush=True)
    return Dashboard(runner, surface, url, login_url)
