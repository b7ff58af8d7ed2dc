"""A burst of connections to a server whose event loop is held still, as a busy relay's is.

The kernel completes a TCP handshake only while the listening socket's accept queue has room (its
``backlog``); past it, the client's SYN is dropped and sent again a second later. Holding the loop
(this function never yields to it) means the server in this process accepts nothing meanwhile, so
the queue alone decides how many of the connections complete.
"""

from __future__ import annotations

import errno
import select
import socket
import time

__all__ = ["handshakes_while_held"]

#: Only ever reached when some handshakes never complete (a queue too short): a hang guard.
_GUARD_S = 10.0


def handshakes_while_held(port: int, count: int, *, host: str = "127.0.0.1") -> int:
    """Start ``count`` non-blocking connections to ``host``:``port`` and, without yielding to the
    caller's event loop, wait until all completed their handshake (or the hang guard passed);
    returns how many did. The sockets are closed before returning."""
    pending: dict[int, socket.socket] = {}
    connected = 0
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            code = sock.connect_ex((host, port))
            if code not in (0, errno.EINPROGRESS):
                sock.close()
                raise OSError(code, f"connecting to {host}:{port}: {errno.errorcode.get(code, code)}")
            pending[sock.fileno()] = sock
        poller = select.poll()
        for fd in pending:
            poller.register(fd, select.POLLOUT)
        guard = time.monotonic() + _GUARD_S
        while pending and time.monotonic() < guard:
            for fd, _events in poller.poll(200):
                poller.unregister(fd)
                sock = pending.pop(fd)
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    connected += 1
                sock.close()
        return connected
    finally:
        for sock in pending.values():
            sock.close()
