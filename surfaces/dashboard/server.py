"""The dashboard's web server (aiohttp): the page, its event stream and a small JSON API.

Security: there is always an access token (``auth``); anything but a loopback bind needs it set in
the environment (``check_bind``), on loopback one is made for the run when it is not. Each request
carries it as ``Authorization: Bearer <token>``, or the cookie of a session opened with a one-time
login link (``login``). With a token made for the run, only loopback Host names are served (no DNS
rebinding). No GET starts or changes anything. A request that does (every POST) must come from
this very origin (a foreign ``Origin``, or ``Sec-Fetch-Site`` cross-site or same-site, is refused)
and be JSON, except the login forms'. Refused logins are logged once per source per minute.

Errors: every API error is JSON ``{"error": "<one plain sentence>"}``. An unexpected exception in a
handler is logged once (with its traceback) and answered 500 with a fixed sentence: no exception
text or traceback ever reaches the browser.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Handler

from core.surface_api import (
    ButtonPress,
    ControlFailed,
    Host,
    InboundMessage,
    RefusalLog,
    StoreError,
    error_prose,
)
from surfaces.dashboard import wording
from surfaces.dashboard.attached import BODY_LIMIT, BadAttachment, attachments
from surfaces.dashboard.auth import COOKIE_NAME, Auth
from surfaces.dashboard.binding import MIN_TOKEN_LENGTH, check_bind, is_loopback
from surfaces.dashboard.login import AUTH, REFUSALS, login, login_needed, login_page, logout, new_link
from surfaces.dashboard.surface import SURFACE_NAME, DashboardSurface, Subscriber, conversation_key, valid_tab

__all__ = ["AUTH", "COOKIE_NAME", "HOST", "MIN_TOKEN_LENGTH", "SURFACE", "USER_ID", "Auth", "check_bind",
           "create_app", "is_loopback"]

log = logging.getLogger("acp_relay.dashboard")

STATIC_DIR = Path(__file__).resolve().parent / "static"
#: The one person at the keyboard; the dashboard's allow-list names this id.
USER_ID = "local"
KEEPALIVE_S = 15.0
MAX_TEXT = 100_000
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: What a browser without a session may ask for, besides the page's files (/static/): the way in and out.
_OPEN = frozenset({"/login", "/login/link", "/logout"})
#: Posted by the login pages' and the page's own HTML forms (not JSON).
_FORMS = _OPEN
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none';"
                               " frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    # Not "no-referrer": with it a browser sends "Origin: null" on the page's own form posts (login,
    # log out), which the cross-site check must refuse. Other sites still get no referrer.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


SURFACE = web.AppKey("surface", DashboardSurface)
HOST = web.AppKey("host", Host)
INDEX = web.AppKey("index", str)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _forbidden_origin(request: web.Request) -> bool:
    """Not this very origin: another site, or another port or scheme of this one ("same-site")."""
    if request.headers.get("Sec-Fetch-Site", "") in ("cross-site", "same-site"):
        return True
    origin = request.headers.get("Origin")
    if origin is None:
        return False  # not a browser's request (a script), or the browser's own navigation
    try:
        parts = urlsplit(origin)
    except ValueError:
        return True
    return parts.scheme not in ("http", "https") or parts.netloc.lower() != request.host.lower()


def _loopback_host(request: web.Request) -> bool:
    return _loopback_name(request.host)


@functools.lru_cache(maxsize=64)
def _loopback_name(host: str) -> bool:
    """Remembered: every request of a relay with a token made for the run asks it of the same few Host
    values, and parsing one (``urlsplit``, ``ipaddress``) cost more than the rest of the checks."""
    try:
        return is_loopback(urlsplit(f"//{host}").hostname or "")
    except ValueError:  # not even a host name
        return False


@web.middleware
async def finish_when_gone(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The outermost middleware. The server cancels a request whose browser went away (so that the event
    stream of a closed tab ends at once, with its subscription: a relay that served thousands of tabs
    keeps none of theirs); every other request finishes what it began (a message handed to the
    relay, a switch) although nobody reads its answer."""
    if request.match_info.handler is events:
        return await handler(request)
    task = asyncio.ensure_future(handler(request))
    task.add_done_callback(_retrieved)  # an error after the browser went away has nobody to go to
    return await asyncio.shield(task)


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


@web.middleware
async def handle_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Inside ``finish_when_gone``: an unexpected exception becomes a JSON 500 with a plain sentence
    (logged once, with its traceback); nothing of the exception reaches the browser."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise  # aiohttp's own answers (404, 405, the handlers' 400s)
    except Exception:
        log.exception("%s %s failed unexpectedly", request.method, request.path)
        return _error(500, wording.INTERNAL_FAILURE)


@web.middleware
async def check_request(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Host, login, Origin and Content-Type checks, before any handler runs."""
    auth = request.app[AUTH]
    if auth.generated and not _loopback_host(request):
        return _error(403, wording.ONLY_LOCALHOST)
    open_path = request.path in _OPEN or request.path.startswith("/static/")
    if not open_path and not auth.permits(request):
        request.app[REFUSALS].refused(request.remote)
        return _error(401, wording.TOKEN_WRONG) if request.path.startswith("/api/") else login_needed(request)
    if request.method in _UNSAFE:
        if _forbidden_origin(request):
            return _error(403, wording.CROSS_SITE)
        if request.content_type != "application/json" and request.path not in _FORMS:
            return _error(415, wording.SEND_JSON)
    return await handler(request)


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in _HEADERS.items():
        response.headers.setdefault(name, value)


def _tab(request: web.Request) -> str:
    tab = request.match_info["tab"]
    if not valid_tab(tab):
        raise _bad_request(wording.BAD_TAB)
    return tab


def _bad_request(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=json.dumps({"error": message}), content_type="application/json")


async def _json(request: web.Request) -> Any:
    """The body as JSON (None: not JSON, or nested too deeply for the parser); a body past the relay's
    limit is a 413 with a sentence (aiohttp's own says it in bytes, as text)."""
    try:
        return await request.json()
    except (ValueError, RecursionError):
        return None
    except web.HTTPRequestEntityTooLarge:
        raise web.HTTPRequestEntityTooLarge(max_size=BODY_LIMIT, actual_size=request.content_length or 0,
                                            text=json.dumps({"error": wording.too_large_body_text(BODY_LIMIT)}),
                                            content_type="application/json") from None


async def _body(request: web.Request, field: str) -> tuple[str, str | None]:
    """The JSON object's string ``field`` and its optional string ``id``; 400 otherwise."""
    return _fields(await _json(request), field)


def _fields(body: Any, field: str) -> tuple[str, str | None]:
    value = body.get(field) if isinstance(body, dict) else None
    ident = body.get("id") if isinstance(body, dict) else None
    if not isinstance(value, str) or not isinstance(ident, str | None):
        raise _bad_request(wording.expected_json_text(field))
    return value, ident


def _index_page() -> str:
    """``index.html``, read once."""
    return (STATIC_DIR / "index.html").read_text(encoding="utf-8")


async def index(request: web.Request) -> web.StreamResponse:
    """The page."""
    return web.Response(text=request.app[INDEX], content_type="text/html")


def _sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event)}\n\n".encode()


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: a snapshot of the tab, then its live changes."""
    tab, surface = _tab(request), request.app[SURFACE]
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"})
    await response.prepare(request)
    with surface.subscribe(tab) as subscriber:  # before the snapshot, so that no change is missed
        quiet = _Quiet(subscriber)
        try:
            await response.write(b"retry: 2000\n" + _sse(surface.snapshot(tab)))
            while True:
                event = await subscriber.queue.get()  # one already queued is taken without waiting
                if event is None:
                    break
                if event is _KEEP_ALIVE:  # also notices a browser that went away
                    await response.write(b": keep-alive\n\n")
                else:
                    await response.write(_sse(surface.snapshot(tab) if event["type"] == "resync" else event))
                quiet.wrote()
        except ConnectionResetError:
            pass
        except Exception:  # the headers are sent: end the stream (the browser reconnects), log once
            log.exception("the event stream of tab %s failed", tab)
        finally:
            quiet.cancel()
    return response


_KEEP_ALIVE: dict[str, Any] = {"type": "keep-alive"}  # queued for its stream alone, never published


class _Quiet:
    """Queues ``_KEEP_ALIVE`` for a stream once nothing was written on it for ``KEEPALIVE_S``.

    One timer a stream, moved on when it fires, not one for every event waited for: with thousands
    of tabs streaming at once, arming and cancelling a timer per event kept the loop's timer heap busy
    (issue 24: a tenth of the event streams' CPU in a burst).
    """

    def __init__(self, subscriber: Subscriber) -> None:
        self._loop = asyncio.get_running_loop()
        self._subscriber = subscriber
        self._interval = KEEPALIVE_S
        self._last = self._loop.time()
        self._timer = self._loop.call_later(self._interval, self._due)

    def wrote(self) -> None:
        """Something was written on the stream just now."""
        self._last = self._loop.time()

    def cancel(self) -> None:
        """The stream ended."""
        self._timer.cancel()

    def _due(self) -> None:
        quiet_s = self._loop.time() - self._last
        if quiet_s >= self._interval:
            self._subscriber.push(_KEEP_ALIVE)
            quiet_s = 0.0
        self._timer = self._loop.call_later(self._interval - quiet_s, self._due)


async def post_message(request: web.Request) -> web.StreamResponse:
    """A message from the composer (a prompt or a command)."""
    tab = _tab(request)
    body = await _json(request)
    text, message_id = _fields(body, "text")
    try:
        attached = attachments(body.get("files"))  # (a dict: _fields found its text)
    except BadAttachment as exc:
        return _error(400, str(exc))
    message_id = message_id or secrets.token_hex(16)
    if not (text.strip() or attached) or not valid_tab(message_id):
        return _error(400, wording.EMPTY_MESSAGE)
    if len(text) > MAX_TEXT:
        return _error(413, wording.too_long_text(MAX_TEXT))
    # Written in the transcript at the end of this round of the loop, and journaled in the same round (one
    # after the other, it took three rounds in a burst, ahead of every first answer).
    shown_text = "\n\n".join(filter(None, (text, wording.attached_line([a.name for a in attached]))))
    shown = request.app[SURFACE].posting_user(tab, shown_text, message_id)
    try:
        await request.app[HOST].submit(InboundMessage(
            surface=SURFACE_NAME, conversation_key=conversation_key(tab), user_id=USER_ID, text=text,
            message_id=message_id, display_name="you", attachments=attached))
    except BaseException as exc:
        shown.cancel()  # not taken: not written either, if it still waits
        shown.add_done_callback(_retrieved)  # if written already, the journal's failure is the one to report
        if not isinstance(exc, StoreError):
            raise
        # Not journaled, so not taken: said in words (a full disk, the database away), not as a failure
        # the relay did not expect; the person sends it again.
        log.warning("a message in tab %s was not taken: %s", tab, exc)
        return _error(503, error_prose(exc))
    await shown  # a transcript that failed is this request's failure (the message is journaled: answered)
    return web.json_response({"id": message_id}, status=202)


async def download(request: web.Request) -> web.StreamResponse:
    """A file the relay posted in the tab (the rest of an answer too long to show)."""
    found = request.app[SURFACE].transcript.file(_tab(request), request.match_info["file"])
    if found is None:
        raise web.HTTPNotFound()
    name, data = found
    return web.Response(body=data, content_type="text/markdown", charset="utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})


async def press_button(request: web.Request) -> web.StreamResponse:
    """An approval button."""
    tab = _tab(request)
    token, message_id = await _body(request, "token")
    result = await request.app[HOST].press(ButtonPress(SURFACE_NAME, conversation_key(tab), USER_ID, token,
                                                        message_id or ""))
    return web.json_response({"outcome": result.outcome, "text": result.text})


async def stop(request: web.Request) -> web.StreamResponse:
    """The Stop button: returns once the turn has really ended."""
    try:
        await request.app[HOST].controls.stop(conversation_key(_tab(request)))
    except ControlFailed as exc:  # relays sharing a store: the conversation's owner did not answer
        return _error(400, str(exc))
    return web.json_response({"ok": True})


async def status(request: web.Request) -> web.StreamResponse:
    """The status panel: agent, model(s), cwd, session, context %, queue, busy."""
    try:
        value = await request.app[HOST].controls.status(conversation_key(_tab(request)))
    except ControlFailed as exc:
        return _error(400, str(exc))
    return web.json_response(dataclasses.asdict(value))


async def models(request: web.Request) -> web.StreamResponse:
    """The model picker's choices, asked for when the tab opens: a POST, as the agent starts (if it had not)."""
    tab = _tab(request)
    try:
        current, choices = await request.app[HOST].controls.models(conversation_key(tab))
    except ControlFailed as exc:  # the agent could not start: the sentence says why, as a turn would
        return _error(400, str(exc))
    return web.json_response({"model": current, "models": list(choices)})


async def set_model(request: web.Request) -> web.StreamResponse:
    """The model picker: works before the tab's first message too."""
    tab = _tab(request)
    model, _ = await _body(request, "model")
    try:
        await request.app[HOST].controls.set_model(conversation_key(tab), model)
    except ControlFailed as exc:  # e.g. the stored agent is no longer configured: say so, do not 500
        return _error(400, str(exc))
    return web.json_response({"model": model})


#: The side panel's pickers (the conversation controls the chat commands also reach).
_KINDS = frozenset({"project", "agent", "sessions", "mode"})


async def _kind(request: web.Request, field: str) -> tuple[str, str]:
    """``{"kind": <a picker>, field: <a string, optional>}``; 400 otherwise."""
    try:
        body = await request.json()
    except (ValueError, RecursionError):
        body = None
    kind = body.get("kind") if isinstance(body, dict) else None
    value = body.get(field, "") if isinstance(body, dict) else None
    if kind not in _KINDS or not isinstance(value, str):
        raise _bad_request(wording.expected_json_text("kind"))
    return kind, value


async def choices(request: web.Request) -> web.StreamResponse:
    """A picker's choices (the sessions list starts the agent: a POST); ``page`` is an earlier ``more``."""
    tab = _tab(request)
    kind, page = await _kind(request, "page")
    try:
        found = await request.app[HOST].controls.choices(conversation_key(tab), kind, page)
    except ControlFailed as exc:
        return _error(400, str(exc))
    return web.json_response({"prompt": found.prompt, "current": found.current, "more": found.more,
                              "options": [{"label": label, "value": value} for label, value in found.options]})


async def choose(request: web.Request) -> web.StreamResponse:
    """Switch the project, agent, session or mode: the sentence saying what happened (or why not)."""
    tab = _tab(request)
    kind, value = await _kind(request, "value")
    try:
        text = await request.app[HOST].controls.choose(conversation_key(tab), kind, value)
    except ControlFailed as exc:
        return _error(400, str(exc))
    return web.json_response({"text": text})


def create_app(surface: DashboardSurface, host: Host, *, access_token: str | None = None,
               trust_forwarded_proto: bool = False, announce: Callable[[str], None] | None = None,
               clock: Callable[[], float] = time.monotonic) -> web.Application:
    """The dashboard application. Without ``access_token`` one is made (``app[AUTH]``, see ``auth``);
    ``announce`` prints the path of a login link the login page asked for where the relay runs."""
    app = web.Application(middlewares=[finish_when_gone, handle_errors, check_request], client_max_size=BODY_LIMIT)
    app[SURFACE], app[HOST] = surface, host
    app[AUTH] = Auth(access_token, trust_forwarded_proto=trust_forwarded_proto, clock=clock, announce=announce)
    app[REFUSALS] = RefusalLog(log, "a dashboard request without a login", level=logging.INFO, clock=clock)
    app[INDEX] = _index_page()
    app.on_response_prepare.append(_security_headers)

    async def close_streams(_app: web.Application) -> None:
        surface.close()  # the event streams end, so the server's shutdown does not wait for them

    app.on_shutdown.append(close_streams)
    api = "/api/conversations/{tab}"
    app.router.add_get("/", index)
    app.router.add_get("/login", login_page)
    app.router.add_post("/login", login)
    app.router.add_post("/login/link", new_link)
    app.router.add_post("/logout", logout)
    app.router.add_static("/static/", STATIC_DIR, follow_symlinks=False)
    app.router.add_get(f"{api}/events", events)
    app.router.add_post(f"{api}/messages", post_message)
    app.router.add_post(f"{api}/buttons", press_button)
    app.router.add_post(f"{api}/stop", stop)
    app.router.add_get(f"{api}/status", status)
    app.router.add_post(f"{api}/models", models)
    app.router.add_post(f"{api}/model", set_model)
    app.router.add_post(f"{api}/choices", choices)
    app.router.add_post(f"{api}/choose", choose)
    app.router.add_get(f"{api}/files/{{file}}", download)
    return app
