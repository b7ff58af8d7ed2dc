"""Open files: the relay holds a descriptor for every connection (each dashboard tab's event stream,
each platform call in flight, each agent's pipes). A burst of a thousand tabs passes the soft limit of
1,024 that many systems give a process, although the hard limit above it is usually far higher.

``raise_open_files_limit`` lifts the soft limit to the hard one when the relay starts, as Go's
runtime does for every program. ``AcceptErrors`` handles what is left past that limit. There,
asyncio's accept loop reports the same error once for every connection waiting in the listen
backlog (up to 1,024), and again after each retry a second later (CPython 3.11 to 3.13: it keeps
looping after the first error, gh-151615). The result is thousands of log lines a second, each one
with a traceback. The handler turns them into one warning a minute, in words.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ACCEPT_OUT_OF_RESOURCES", "AcceptErrors", "open_files_limit", "raise_open_files_limit"]

log = logging.getLogger("acp_relay.descriptors")

#: asyncio's message (``selector_events``) for an ``accept`` refused for want of descriptors or memory.
ACCEPT_OUT_OF_RESOURCES = "socket.accept() out of system resource"
#: In the message of asyncio's retry of the listening socket a second after such a refusal (one is
#: scheduled per failed accept): run after the server closed, its socket is gone (fd -1) and it raises.
_RETRY = "._start_serving("
#: The soft limit asked for where the hard one is unlimited (macOS refuses more than ``OPEN_MAX``).
UNLIMITED_TARGET = 10_240
WARN_EVERY_S = 60.0


def open_files_limit() -> int:
    """The soft limit on open files in effect."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def raise_open_files_limit() -> None:
    """Lift the soft limit on open files to the hard one. Where the system refuses,
    the limit stays as it was (the relay runs as before, ``AcceptErrors`` says when it is reached)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.info("the open files limit stays at %d (raising it to %d was refused: %s)", soft, target, exc)


def _shortage(exc: object) -> str:
    code = getattr(exc, "errno", None)
    if code == errno.EMFILE:
        return f"the relay has as many files and connections open as its limit allows ({open_files_limit()})"
    if code == errno.ENFILE:
        return "the system has as many files open as it allows"
    return "the system is short of memory for connections"


class AcceptErrors:
    """The loop's exception handler: a connection the relay could not accept (out of descriptors or
    memory) is one warning a minute, with the count since the last. asyncio's retries of those accepts
    that run after the server closed (at a stop) fail on its closed socket: after a refusal they are
    expected, and not reported. Anything else goes to asyncio's own handler."""

    def __init__(self, every_s: float = WARN_EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self._clock = clock
        self._last: float | None = None
        self._since = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Handle one report of the loop's (``loop.set_exception_handler``)."""
        message = str(context.get("message", ""))
        if message != ACCEPT_OUT_OF_RESOURCES:
            stale = self._last is not None and _RETRY in message
            if stale and isinstance(context.get("exception"), OSError | ValueError):
                log.debug("a retry of accepting on a closed server: %r", context.get("exception"))
                return  # the stale retries of refusals already said (one per failed accept)
            loop.default_exception_handler(context)
            return
        self._since += 1
        now = self._clock()
        if self._last is not None and now - self._last < self.every_s:
            return
        again = f" ({self._since} failed accepts since the last warning)" if self._last is not None else ""
        log.warning("new connections wait: %s; they are accepted again as others close. For this many at "
                    "once, raise the limit (ulimit -n, or LimitNOFILE= in a systemd unit)%s",
                    _shortage(context.get("exception")), again)
        self._last, self._since = now, 0
