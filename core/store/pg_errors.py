"""PostgreSQL's failures in the store's plain words, each marked transient (a network fault, a
server restarting: try again) or not (a fact of the configuration: fix it, trying again changes nothing).

libpq reports a failed connection without an SQLSTATE, so those are told apart by their message;
failures on an open connection carry their SQLSTATE. No sentence quotes the connection string: a
password could be in it.
"""

from __future__ import annotations

import re

from core.redact import redact

__all__ = ["FULL", "describe_pg"]

#: SQLSTATE disk_full: the server could not extend a file (a full disk, or a full tablespace's).
FULL = "53100"

# (pattern on libpq's message, the sentence, transient), first match wins. {source}: where the URL is.
_CONNECT: tuple[tuple[re.Pattern[str], str, bool], ...] = tuple((re.compile(p, re.IGNORECASE), s, t) for p, s, t in (
    (r"password authentication failed|authentication failed|password is required|no password supplied",
     "the server refused the user name or password; check them in {source}", False),
    (r"no pg_hba\.conf entry", "the server does not let this user connect from this machine (no pg_hba.conf entry "
     "for it); allow it on the server, or fix the user in {source}", False),
    (r'database "[^"]*" does not exist', "the database named in {source} does not exist on the server; create it "
     "(createdb) or fix the name", False),
    (r'role "[^"]*" does not exist', "the user named in {source} does not exist on the server", False),
    (r"failed to resolve host|could not translate host name|name or service not known",
     "the host name in {source} cannot be resolved; check it", False),
    (r"ssl", "the server and {source} disagree about SSL ({reason}); set sslmode in the URL to what the server "
     "offers", False),
    (r"starting up|shutting down|in recovery mode|not yet accepting connections",
     "the database server is restarting ({reason}); trying again shortly", True),
    (r"too many clients|remaining connection slots", "the database server has no free connection ({reason})", True),
    (r"connection refused", "cannot reach the database server (connection refused); is it running, and are the "
     "host and port in {source} right?", True),
    (r"timeout expired|timed out", "the database server did not answer in time ({reason}); check the network "
     "between this machine and it", True),
    (r"no route to host|network is unreachable|host is unreachable|connection reset",
     "cannot reach the database server ({reason}); check the network", True),
))

_PREFIX = re.compile(r"^(?:connection failed: )?(?:connection to server (?:at|on) .*? failed: )?(?:FATAL:\s+)?")

# SQLSTATE classes and codes on an open connection.
_STATES: dict[str, tuple[str, bool]] = {
    "08": ("the connection to the database server was lost ({reason}); it is opened again on the next call", True),
    "57P01": ("the database server ended the connection ({reason}); it is opened again on the next call", True),
    "57P02": ("the database server ended the connection ({reason}); it is opened again on the next call", True),
    "57P03": ("the database server is restarting ({reason}); trying again shortly", True),
    "57014": ("the database took too long to answer (statement timeout); is it overloaded?", True),
    "55P03": ("a row stayed locked by another connection too long (lock timeout); try again", True),
    "40001": ("a concurrent write got in the way (serialization failure); try again", True),
    "40P01": ("a concurrent write got in the way (deadlock); try again", True),
    "53300": ("the database server has no free connection ({reason})", True),
    "25006": ("the database server only reads (a standby?); point {source} at the primary", False),
    "42501": ("the database user may not do this ({reason}); it needs to own the schema the store uses "
              "(GRANT CREATE ON SCHEMA ... TO it)", False),
    "22P05": ("a text held a character PostgreSQL cannot store ({reason})", False),
    FULL: ("the disk that holds the database is full ({reason}); free some space on the database server", False),
}


def describe_pg(message: str, sqlstate: str | None, *, connected: bool, source: str,
                secrets: tuple[str, ...] = ()) -> tuple[str, bool]:
    """``(sentence, transient)`` for a PostgreSQL failure. ``connected``: it happened on an open
    connection (a lost connection is then transient whatever the message); ``secrets``: text never to
    quote (the URL's password)."""
    reason = _reason(message, secrets)
    if sqlstate is not None:
        for key in (sqlstate, sqlstate[:2]):
            if key in _STATES:
                sentence, transient = _STATES[key]
                return sentence.format(reason=reason, source=source), transient
        return reason, False
    for pattern, sentence, transient in _CONNECT:
        if pattern.search(message):
            return sentence.format(reason=reason, source=source), transient
    if connected:
        return f"the connection to the database server was lost ({reason}); it is opened again on the next call", True
    return f"cannot connect to the database server ({reason})", True


def _reason(message: str, secrets: tuple[str, ...]) -> str:
    """libpq's last line, without the prefix it repeats, the secrets, or a newline."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    text = lines[0] if lines else "no reason given"
    text = _PREFIX.sub("", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "****")
    return redact(text)
