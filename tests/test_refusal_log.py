"""Refused requests are logged once per source per minute, with how many came since: a flood of
forged posts (2,500 a second were seen) must not grow the log without bound."""

from __future__ import annotations

import logging

import pytest

from core.refusal_log import RefusalLog

log = logging.getLogger("acp_relay.test.refusals")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == log.name]


def test_a_flood_from_one_source_is_one_line_a_minute_with_its_count(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    refusals = RefusalLog(log, "a webhook post without the right secret", clock=clock)
    with caplog.at_level(logging.INFO):
        for _ in range(2500):
            refusals.refused("203.0.113.7")
        assert lines(caplog) == ["refused a webhook post without the right secret from 203.0.113.7"]
        clock.now += 59.0
        refusals.refused("203.0.113.7")
        assert len(lines(caplog)) == 1
        clock.now += 1.0
        refusals.refused("203.0.113.7")
    assert lines(caplog)[1:] == [
        "refused a webhook post without the right secret from 203.0.113.7 (and 2500 more since the last such line)"]
    assert [r.levelno for r in caplog.records] == [logging.WARNING] * 2


def test_each_source_has_its_own_minute(caplog: pytest.LogCaptureFixture) -> None:
    refusals = RefusalLog(log, "a request", clock=Clock(), level=logging.INFO)
    with caplog.at_level(logging.INFO):
        for source in ("a", "b", "a", None, "b", None):
            refusals.refused(source)
    assert lines(caplog) == ["refused a request from a", "refused a request from b",
                             "refused a request from an unknown address"]
    assert {r.levelno for r in caplog.records} == {logging.INFO}


def test_the_sources_remembered_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    refusals = RefusalLog(log, "a request", clock=Clock(), max_sources=100)
    with caplog.at_level(logging.INFO):
        for i in range(10_000):
            refusals.refused(f"10.0.{i // 256}.{i % 256}")
    assert len(refusals) == 100  # ten thousand addresses cost no more memory than a hundred
    assert len(lines(caplog)) == 10_000  # each one a new source
