"""Every sentence the dashboard itself says, in one place: the API's errors, the login pages, and
what the operator reads at start-up. (The engine's words reach the page through the transcript.)

A failure the server did not expect is answered with the core's own sentence for that,
``core.failures.INTERNAL_FAILURE``, so the relay has one wording for it on every surface.
"""

from __future__ import annotations

import html

from core.surface_api import INTERNAL_FAILURE

__all__ = [
    "BAD_TAB",
    "CROSS_SITE",
    "EMPTY_MESSAGE",
    "INTERNAL_FAILURE",
    "LINK_TOO_SOON_PAGE",
    "ONLY_LOCALHOST",
    "SEND_JSON",
    "TOKEN_WRONG",
    "TOKEN_WRONG_PAGE",
    "attached_line",
    "bind_failure_text",
    "dashboard_at_text",
    "expected_json_text",
    "link_expired_page",
    "link_printed_page",
    "login_link_page",
    "login_link_text",
    "login_needed_page",
    "no_token_text",
    "too_large_body_text",
    "too_long_text",
    "weak_token_text",
]

# -- the API's errors (JSON ``{"error": ...}``; the page shows them as they are) --------------
ONLY_LOCALHOST = "this dashboard only answers to localhost"
TOKEN_WRONG = "log in first: open the login link acp-relay printed, or send the access token as a bearer token"
CROSS_SITE = "cross-site request refused"
SEND_JSON = "send JSON (Content-Type: application/json)"
BAD_TAB = "bad tab id"
EMPTY_MESSAGE = "empty message or bad message id"


def expected_json_text(field: str) -> str:
    """The request body was not a JSON object with the string ``field``."""
    return f"expected a JSON object with a string {field!r}"


def attached_line(names: list[str]) -> str:
    """Below the person's own message in the transcript: the files they attached ("" when none)."""
    return f"Attached: {', '.join(names)}" if names else ""


def too_large_body_text(limit: int) -> str:
    """A message whose files, with its text, are more than the relay takes at once."""
    return f"the message and its files are larger than the relay takes at once ({limit // (1024 * 1024)} MB)"


def too_long_text(limit: int) -> str:
    """A composer message over ``limit`` characters."""
    return f"the message is longer than {limit} characters"


# -- the login pages (HTML; a browser without a session sees one of them) ------------------
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>acp-relay: log in</title><link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/app.css">{script}</head>
<body class="login-page"><main class="login"><h1>acp-relay</h1>
{body}
</main></body></html>"""
_NEW_LINK_FORM = """<form method="post" action="/login/link"><button type="submit">Print a new login link there</button>
</form>"""
_TOKEN_FORM = """<form method="post" action="/login"><label>Or type the access token
<input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Log in</button></form>"""
_OPEN_THE_LINK = ("<p>Open the login link that <code>acp-relay run</code> printed in the terminal where it runs "
                  "(it works once, within {minutes} minutes).</p>")


def _page(body: str, script: str = "") -> str:
    return _PAGE.format(body=body, script=script)


def login_needed_page(*, token_set: bool, minutes: int) -> str:
    """The page a browser without a session gets (401), with a way in."""
    form = _TOKEN_FORM if token_set else ""
    return _page(f"<p>This dashboard needs you to log in.</p>\n{_OPEN_THE_LINK.format(minutes=minutes)}\n"
                 f"{_NEW_LINK_FORM}\n{form}")


def login_link_page(code: str) -> str:
    """What a login link shows: a form that logs in (sent at once by ``login.js``; a GET changes nothing)."""
    return _page(f"""<form id="login-link" method="post" action="/login"><input type="hidden" name="code"
value="{html.escape(code, quote=True)}"><p>Logging in…</p><button type="submit">Log in</button></form>""",
                 script='<script src="/static/login.js" defer></script>')


def link_expired_page(*, minutes: int) -> str:
    """A login link that was used already, expired, or never was (403)."""
    return _page(f"<p>This login link has expired or was used already; a link works once, within {minutes} "
                 f"minutes.</p>\n{_NEW_LINK_FORM}")


TOKEN_WRONG_PAGE = _page(f"<p>That access token is wrong.</p>\n{_TOKEN_FORM}")


def link_printed_page(*, minutes: int) -> str:
    """The relay printed a new login link in its terminal."""
    return _page(f"<p>A new login link is in the terminal where acp-relay runs. It works once, within {minutes} "
                 "minutes.</p>")


LINK_TOO_SOON_PAGE = _page("<p>A new login link was printed a moment ago: look in the terminal where acp-relay "
                           "runs.</p>")

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
    alternative = f", or unset {token_env} to have one made for each run" if loopback else ""
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


def login_link_text(login_url: str, *, minutes: int) -> str:
    """What ``acp-relay run`` prints for a one-time login link: a line saying so, then the link on its own line."""
    lead = f"acp-relay: open this link to log in to the dashboard (it works once, within {minutes} minutes):"
    return f"{lead}\n{login_url}"
