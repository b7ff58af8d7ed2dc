"""``AcceptErrors``, the loop's exception handler: one warning a minute for connections the relay could
not accept, anything else to asyncio's own handler (the process tests: tests/dashboard/test_open_files.py)."""

from __future__ import annotations

import asyncio
import errno
import logging

import pytest

from core.descriptors import ACCEPT_OUT_OF_RESOURCES, AcceptErrors


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def refused(code: int = errno.EMFILE) -> dict[str, object]:
    return {"message": ACCEPT_OUT_OF_RESOURCES, "exception": OSError(code, "Too many open files")}


async def test_a_flood_of_refused_accepts_is_one_warning_a_minute_with_the_count(
        caplog: pytest.LogCaptureFixture) -> None:
    loop, clock = asyncio.get_running_loop(), Clock()
    handler = AcceptErrors(every_s=60.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="acp_relay.descriptors"):
        for _ in range(1024):
            handler(loop, refused())
        clock.now += 60.0
        for _ in range(3):
            handler(loop, refused())
    first, second = [r.getMessage() for r in caplog.records]
    assert "as many files and connections open as its limit allows" in first and "since the last" not in first
    assert "ulimit -n" in first
    assert second.endswith("(1024 failed accepts since the last warning)")
    assert all(r.exc_info is None for r in caplog.records)


async def test_the_system_table_and_memory_are_named_as_such(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    with caplog.at_level(logging.WARNING, logger="acp_relay.descriptors"):
        AcceptErrors()(loop, refused(errno.ENFILE))
        AcceptErrors()(loop, refused(errno.ENOBUFS))
    table, memory = [r.getMessage() for r in caplog.records]
    assert "the system has as many files open as it allows" in table
    assert "the system is short of memory for connections" in memory


async def test_any_other_error_goes_to_asyncios_own_handler(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        AcceptErrors()(loop, {"message": "Task exception was never retrieved", "exception": ValueError("x")})
    [record] = caplog.records
    assert record.name == "asyncio" and record.getMessage() == "Task exception was never retrieved"


STALE_RETRY = {"message": "Exception in callback BaseSelectorEventLoop._start_serving(<aiohttp.web_server>, "
                          "<socket.socket fd=-1>, None, <Server sockets=()>, 1024, None, None)",
               "exception": ValueError("Invalid file descriptor: -1")}


async def test_asyncios_retries_after_a_refusal_on_a_closed_server_are_not_reported(
        caplog: pytest.LogCaptureFixture) -> None:
    """CPython schedules one retry per failed accept; those that run after the server closed (a stop)
    raise on its closed socket. After a refusal they are expected: not a traceback each."""
    loop, handler = asyncio.get_running_loop(), AcceptErrors()
    with caplog.at_level(logging.INFO):
        handler(loop, refused())
        for _ in range(1024):
            handler(loop, STALE_RETRY)
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


async def test_the_same_failure_without_a_refusal_before_it_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        AcceptErrors()(loop, STALE_RETRY)
    [record] = caplog.records
    assert record.name == "asyncio" and "_start_serving" in record.getMessage()
