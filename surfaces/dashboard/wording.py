"""Every sentence the dashboard itself says, in one place: the API's errors, the login pages, and
what the operator reads at start-up. (The engine's words reach the page through the transcript.)

A failure the server did not expect is answered with the core's own sentence for that,
``core.failures.INTERNAL_FAILURE``, so the relay has one wording for it on every surface.
"""

from __future__ import annotations

from core.failures import INTERNAL_FAILURE

__all__ = [
    "BAD_TAB",
    "CROSS_SITE",
    "EMPTY_MESSAGE",
    "INTERNAL_FAILURE",
    "LOGIN_NEEDED_PAGE",
    "LOGIN_USED_PAGE",
    "ONLY_LOCALHOST",
    "SEND_JSON",
    "TOKEN_WRONG",
    "bind_failure_text",
    "dashboard_at_text",
    "expected_json_text",
    "login_link_text",
    "no_token_text",
    "too_long_text",
    "weak_token_text",
]

# -- the API's errors (JSON ``{"error": ...}``; the page shows them as they are) --------------
ONLY_LOCALHOST = "this dashboard only answers to localhost"
TOKEN_WRONG = "the access token is missing or wrong"
CROSS_SITE = "cross-site request refused"
SEND_JSON = "send JSON (Content-Type: application/json)"
BAD_TAB = "bad tab id"
EMPTY_MESSAGE = "empty message or bad message id"


def expected_json_text(field: str) -> str:
    """The request body was not a JSON object with the string ``field``."""
    return f"expected a JSON object with a string {field!r}"


def too_long_text(limit: int) -> str:
    """A composer message over ``limit`` characters."""
    return f"the message is longer than {limit} characters"


# -- the login pages (HTML; a browser without the cookie sees one of them) -------------------
_LOGIN_PAGE = """<!doctype html><meta charset="utf-8"><title>acp-relay: log in</title><p>This dashboard
{what}. Open the one-time login link that <code>acp-relay</code> printed when it started
(restart the relay for a new link), or send the token as an <code>Authorization: Bearer</code> header."""
LOGIN_NEEDED_PAGE = _LOGIN_PAGE.format(what="needs its access token")
LOGIN_USED_PAGE = _LOGIN_PAGE.format(what="login link was already used")

# -- start-up, for the operator (``acp-relay run`` prints one line and exits 2) ---------------
_TOKEN_ADVICE = "python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"


def no_token_text(host: str, token_env: str) -> str:
    """A bind other than loopback, and no access token."""
    return (f"refusing to serve the dashboard on {host or 'every interface'!r} without an access token: "
            f"anyone who can reach it could run the agent. Set the environment variable {token_env}, "
            "or bind to 127.0.0.1.")


def weak_token_text(token_env: str, length: int, minimum: int, *, loopback: bool) -> str:
    """The access token (``length`` characters once stripped) is shorter than ``minimum``."""
    what = f"an access token of only {length} characters" if length else "a blank access token"
    alternative = f", or unset {token_env} to serve 127.0.0.1 without one" if loopback else ""
    return (f"refusing to start the dashboard: {token_env} holds {what}, which could be guessed. Use at least "
            f"{minimum} random characters ({_TOKEN_ADVICE}){alternative}.")


def bind_failure_text(where: str, *, in_use: bool, denied: bool, reason: str) -> str:
    """Serving on ``where`` (``host:port``) failed: the port is taken, privileged, or not this machine's."""
    if in_use:
        return f"{where} is already in use (another acp-relay?); change surfaces.dashboard.port"
    if denied:
        return f"{where} needs more privileges than the relay has; choose a port above 1023 in surfaces.dashboard.port"
    return (f"cannot serve the dashboard on {where} ({reason}); check surfaces.dashboard.host and "
            "surfaces.dashboard.port")


def dashboard_at_text(url: str, *, public: bool) -> str:
    """The line ``acp-relay run`` prints once the dashboard serves."""
    where = " (reachable from other machines: token required)" if public else ""
    return f"acp-relay: dashboard at {url}{where}"


def login_link_text(login_url: str) -> str:
    """The line with the one-time login link (printed when an access token is set)."""
    return f"acp-relay: dashboard login link (works once): {login_url}"
