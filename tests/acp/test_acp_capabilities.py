"""What the agent says it can do is respected: its protocol version, whether it takes images,
and the PATH it is given."""

from __future__ import annotations

import os
import stat
import sys

import psutil
import pytest

from core.acp import AgentSpec
from core.acp.client import AcpError
from core.failures import classify
from tests.conftest import FAKE_AGENT_PATH


async def test_an_agent_speaking_another_protocol_version_is_refused_in_plain_words(start, agent) -> None:
    with pytest.raises(AcpError) as raised:
        await start(agent("--protocol-version", "2"))
    verdict = classify(raised.value)
    assert (verdict.kind, verdict.transient) == ("protocol_version", False)
    assert "version 2" in verdict.prose and "version 1" in verdict.prose
    left = [p for p in psutil.Process().children(recursive=True)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and "--protocol-version" in p.cmdline()]
    assert left == [], "the agent refused at initialize is stopped, not left running"


async def test_the_runtime_knows_whether_the_agent_takes_images(start, agent) -> None:
    assert (await start(agent())).accepts_images
    assert not (await start(agent("--no-images"))).accepts_images


async def test_the_command_is_found_on_the_path_the_agent_is_given(start, tmp_path) -> None:
    bin_dir = tmp_path / "agent-bin"
    bin_dir.mkdir()
    launcher = bin_dir / "my-acp-agent"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_AGENT_PATH} \"$@\"\n")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
    spec = AgentSpec("mine", "my-acp-agent", env={"PATH": path}, cwd=str(tmp_path))
    runtime = await start(spec)  # not on the relay's PATH, only on the one in agents.mine.env
    assert runtime.init_result["agentInfo"]["name"] == "fake-acp-agent"
