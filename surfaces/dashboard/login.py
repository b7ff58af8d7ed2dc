"""The login pages and their forms: ``/login`` (a link's page, and the form that logs in),
``/login/link`` (print a new link where the relay runs) and ``/logout``. See ``auth`` for the rules.

Nothing here changes anything on a GET: a login link's page only holds the form that uses it up
(``static/login.js`` sends it at once), so a link preview or prefetch cannot spend it.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from core.surface_api import RefusalLog
from surfaces.dashboard import wording
from surfaces.dashboard.auth import COOKIE_NAME, LINK_TTL_S, Auth

__all__ = ["AUTH", "REFUSALS", "login", "login_needed", "login_page", "logout", "new_link"]

AUTH = web.AppKey("auth", Auth)
REFUSALS = web.AppKey("refusals", RefusalLog)
_MINUTES = round(LINK_TTL_S / 60)


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/html")


def login_needed(request: web.Request) -> web.Response:
    """The 401 page for a browser without a session."""
    auth = request.app[AUTH]
    return _html(wording.login_needed_page(token_set=not auth.generated, minutes=_MINUTES), 401)


async def login_page(request: web.Request) -> web.StreamResponse:
    """``GET /login``: a link's page (its form logs in), or the page that says how to log in."""
    code = request.query.get("code", "")
    if not code:
        return login_needed(request)
    return _html(wording.login_link_page(code))


async def _form(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            body = None
        return body if isinstance(body, dict) else {}
    return dict(await request.post())


async def login(request: web.Request) -> web.StreamResponse:
    """``POST /login`` with a link's ``code`` or the access ``token``: opens a session, then the page."""
    auth, form = request.app[AUTH], await _form(request)
    code, token = form.get("code"), form.get("token")
    if isinstance(code, str) and code:
        if not auth.redeem(code):
            request.app[REFUSALS].refused(request.remote)
            return _html(wording.link_expired_page(minutes=_MINUTES), 403)
    elif not (isinstance(token, str) and token and not auth.generated and auth.token_matches(token)):
        request.app[REFUSALS].refused(request.remote)
        return _html(wording.TOKEN_WRONG_PAGE, 403)
    response = web.Response(status=303, headers={"Location": "/"})
    response.set_cookie(COOKIE_NAME, auth.open_session(), httponly=True, samesite="Strict", path="/",
                        secure=auth.over_tls(request), max_age=int(auth.session_ttl_s))
    return response


async def logout(request: web.Request) -> web.StreamResponse:
    """``POST /logout``: the session ends here and in the browser."""
    auth = request.app[AUTH]
    session = auth.session_of(request)
    if session is not None:
        auth.end_session(session)
    response = web.Response(status=303, headers={"Location": "/"})
    response.del_cookie(COOKIE_NAME, path="/")
    return response


async def new_link(request: web.Request) -> web.StreamResponse:
    """``POST /login/link``: print a new login link where the relay runs (now and then, not on demand)."""
    auth = request.app[AUTH]
    if not auth.may_print_new_link():
        return _html(wording.LINK_TOO_SOON_PAGE, 429)
    auth.announce(f"/login?code={auth.new_link()}")
    return _html(wording.link_printed_page(minutes=_MINUTES))
