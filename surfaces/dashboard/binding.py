"""Where the dashboard may listen, and with which access token (no aiohttp here: check-config uses it)."""

from __future__ import annotations

import ipaddress

from surfaces.dashboard.errors import TokenMissing, WeakToken

__all__ = ["MIN_TOKEN_LENGTH", "check_bind", "is_loopback"]

#: An access token shorter than this (after stripping whitespace) is refused: it could be guessed.
MIN_TOKEN_LENGTH = 16


def is_loopback(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 and ::1 (brackets allowed)."""
    host = host.strip().strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, access_token: str | None, *, token_env: str = "ACP_RELAY_DASHBOARD_TOKEN") -> str | None:
    """The access token set for the dashboard (stripped of whitespace), or None: then, on loopback,
    ``create_app`` makes one for the run.

    Raises ``TokenMissing`` (the relay does not start) when the bind is not loopback and no token is
    set, or ``WeakToken`` when a token is set but shorter than ``MIN_TOKEN_LENGTH``: a token set while
    bound to loopback is used too, so it must be as strong. Both are ``StartupError``.
    """
    if access_token is None:
        if not is_loopback(host):
            raise TokenMissing(host, token_env)
        return None
    token = access_token.strip()
    if len(token) < MIN_TOKEN_LENGTH:
        raise WeakToken(token_env, len(token), MIN_TOKEN_LENGTH, loopback=is_loopback(host))
    return token
