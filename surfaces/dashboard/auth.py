"""Who may use the dashboard: its owner, as local web tools that run code do it (Jupyter, VS Code's
serve-web). There is always an access token, also on 127.0.0.1: the one in the environment variable
the config names, else one made for this run (never printed; any account on the machine can reach
127.0.0.1, so "loopback" is no login).

A browser gets in with a ONE-TIME LOGIN LINK that ``acp-relay run`` prints where it runs (or, when
the token is set, by typing the token into the login form); either opens a SESSION: a random id in
an HttpOnly, SameSite=Strict cookie, kept only in the relay's memory, so it ends on ``Log out``, after
``SESSION_TTL_S``, and at a restart. The cookie is ``Secure`` when the request came over TLS: directly,
or through a reverse proxy that says ``X-Forwarded-Proto: https``, believed only when the config
trusts it (``trust_forwarded_proto``; anyone can send that header). Scripts send the token as
``Authorization: Bearer <token>``.

An unused link expires after ``LINK_TTL_S``; the login page can ask the relay to print a new one
(at most one per ``NEW_LINK_EVERY_S``), which only whoever sees the relay's terminal can read.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable

from aiohttp import web

__all__ = ["COOKIE_NAME", "LINK_TTL_S", "MAX_SESSIONS", "NEW_LINK_EVERY_S", "SESSION_TTL_S", "Auth"]

COOKIE_NAME = "acp_relay_session"
#: An unused login link stops working after this many seconds.
LINK_TTL_S = 10 * 60.0
#: A session ends this long after it began (it also ends on logout and at a restart).
SESSION_TTL_S = 7 * 24 * 3600.0
#: Sessions kept at once; a new one past it ends the oldest.
MAX_SESSIONS = 64
#: Login links waiting to be used at once; a new one past it invalidates the oldest.
_MAX_LINKS = 8
#: The login page may ask for a new link this often.
NEW_LINK_EVERY_S = 10.0


class Auth:
    """The access token, the login links waiting to be used, and the open sessions."""

    def __init__(self, access_token: str | None = None, *, trust_forwarded_proto: bool = False,
                 clock: Callable[[], float] = time.monotonic, session_ttl_s: float = SESSION_TTL_S,
                 announce: Callable[[str], None] | None = None) -> None:
        self.generated = access_token is None
        self.access_token = access_token or secrets.token_urlsafe(32)
        self.trust_forwarded_proto = trust_forwarded_proto
        self.clock = clock
        self.session_ttl_s = session_ttl_s
        self._links: OrderedDict[str, float] = OrderedDict()  # code -> expires at
        self._sessions: OrderedDict[str, float] = OrderedDict()  # session id -> expires at
        self._last_new_link: float | None = None
        #: Prints a new link's path (``/login?code=...``) where the relay runs (the login page asks for one).
        self.announce: Callable[[str], None] = announce or (lambda _path: None)

    # -- login links ---------------------------------------------------------------------------

    def new_link(self) -> str:
        """A new one-time login code (the ``code`` of ``/login?code=...``), valid for ``LINK_TTL_S``."""
        code = secrets.token_urlsafe(24)
        self._links[code] = self.clock() + LINK_TTL_S
        while len(self._links) > _MAX_LINKS:
            self._links.popitem(last=False)
        return code

    def may_print_new_link(self) -> bool:
        """True (and counted) at most once per ``NEW_LINK_EVERY_S``."""
        now = self.clock()
        if self._last_new_link is not None and now - self._last_new_link < NEW_LINK_EVERY_S:
            return False
        self._last_new_link = now
        return True

    def redeem(self, code: str) -> bool:
        """True once for a code that has not expired; it is used up either way."""
        found = next((known for known in self._links if hmac.compare_digest(known.encode(), code.encode())), None)
        if found is None:
            return False
        return self._links.pop(found) > self.clock()

    def token_matches(self, token: str) -> bool:
        """True for the access token (compared in constant time)."""
        return hmac.compare_digest(token.strip().encode(), self.access_token.encode())

    # -- sessions ------------------------------------------------------------------------------

    def open_session(self) -> str:
        """A new session id for the cookie."""
        session = secrets.token_urlsafe(32)
        self._sessions[session] = self.clock() + self.session_ttl_s
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def end_session(self, session: str) -> None:
        """Log out: the session id is worth nothing from now on."""
        self._sessions.pop(session, None)

    def session_of(self, request: web.Request) -> str | None:
        """The request's session id, if it is one that is open."""
        session = request.cookies.get(COOKIE_NAME, "")
        expires = self._sessions.get(session) if session else None
        if expires is None:
            return None
        if expires <= self.clock():
            del self._sessions[session]
            return None
        return session

    def permits(self, request: web.Request) -> bool:
        """True for the bearer token or an open session's cookie."""
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self.token_matches(given):
            return True
        return self.session_of(request) is not None

    def over_tls(self, request: web.Request) -> bool:
        """The browser reached us over HTTPS: directly, or through a proxy we were told to trust."""
        if request.secure:
            return True
        if not self.trust_forwarded_proto:
            return False
        first = request.headers.get("X-Forwarded-Proto", "").split(",")[0]
        return first.strip().lower() == "https"
