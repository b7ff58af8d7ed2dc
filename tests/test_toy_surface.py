"""A surface in a package of its own: the toy of ``tests/toy_surface`` (docs/writing-a-surface.md).

It is installed the way a user installs a published surface (pip, from its own pyproject; here
``--target`` a folder on ``PYTHONPATH``, offline), and then ``acp-relay`` finds it through its entry
point: ``check-config`` knows its settings, and ``acp-relay run`` answers a message written into its
inbox. No file of the core names it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.process import HANG_GUARD_S, Spawn, relay_processes, write_config
from tests.waiting import until

__all__ = ["relay_processes"]

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "tests" / "toy_surface"


@pytest.fixture
def toy_site(tmp_path: Path) -> Path:
    """The toy package installed into a folder of its own (built from a copy: the tree stays clean)."""
    return install_toy(tmp_path)


def install_toy(tmp_path: Path, added: str = "") -> Path:
    """The toy installed into ``tmp_path/site``; ``added`` is appended to its plugin module first."""
    source, site = tmp_path / "toy-src", tmp_path / "site"
    shutil.copytree(TOY, source)
    if added:
        plugin = source / "acp_relay_toy" / "__init__.py"
        plugin.write_text(plugin.read_text(encoding="utf-8") + added, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), str(source)], check=True, capture_output=True, timeout=120)
    return site


def outbox(chat: Path) -> list[dict[str, Any]]:
    path = chat / "outbox.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def shown(chat: Path) -> dict[str, str]:
    """What the toy chat shows: each message's latest text, by id."""
    texts: dict[str, str] = {}
    for entry in outbox(chat):
        if entry["op"] == "delete":
            texts.pop(entry["id"], None)
        else:
            texts[entry["id"]] = entry["text"]
    return texts


def write(folder: Path, **line: str) -> None:
    with (folder / "inbox.jsonl").open("a", encoding="utf-8") as inbox:
        inbox.write(json.dumps(line) + "\n")


def test_the_core_names_no_toy() -> None:
    assert not [p for p in (ROOT / "core").rglob("*.py") if "toy" in p.read_text(encoding="utf-8").lower()]


async def test_an_installed_surface_package_is_found_checked_and_answers_through_acp_relay_run(
        relay_processes: Spawn, tmp_path: Path, toy_site: Path) -> None:
    chat = tmp_path / "chat"
    chat.mkdir()
    config = write_config(tmp_path, {"toy": {"enabled": True, "folder": str(chat), "allowed_user_ids": ["alice"],
                                             "poll_s": 0.05}})
    path = os.pathsep.join([str(toy_site), str(ROOT)])

    checked = await relay_processes(config, "check-config", PYTHONPATH=path)
    assert await checked.exited() == 0, checked.stderr
    assert json.loads(checked.stdout)["surfaces"]["toy"]["folder"] == str(chat)

    relay = await relay_processes(config, PYTHONPATH=path)
    write(chat, id="1", chat="c1", user="alice", text="text hello from the toy")
    write(chat, id="2", chat="c1", user="mallory", text="text let me in")
    await until(lambda: any("hello from the toy" in t and "⏱" in t for t in shown(chat).values()),
                "the answer is shown in the toy chat", timeout=HANG_GUARD_S)
    await until(lambda: any("mallory" in t for t in shown(chat).values()), "the stranger is refused",
                timeout=HANG_GUARD_S)
    assert await relay.stop() == 0, relay.stderr
    answers = [e for e in outbox(chat) if e["op"] == "send" and e["reply_to"] == "1"]
    assert len(answers) == 1, outbox(chat)


async def test_without_the_package_the_toy_section_is_an_unknown_surface(
        relay_processes: Spawn, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"toy": {"enabled": True}})
    checked = await relay_processes(config, "check-config")
    assert await checked.exited() == 2
    installed = "(installed: dashboard, discord, slack, telegram)"
    assert f"surfaces.toy: no such surface is installed {installed}" in checked.stderr


BROKEN_DOCTOR = """

async def doctor(settings: ToySettings) -> list[tuple[bool, str]]:
    raise RuntimeError("the toy's doctor has a bug")


PLUGIN = SurfacePlugin(name="toy", settings=ToySettings, launch=launch, check=check, doctor=doctor)
"""


async def test_a_surface_package_whose_doctor_has_a_bug_gets_one_plain_sentence_and_one_logged_traceback(
        relay_processes: Spawn, tmp_path: Path) -> None:
    # The CLI's funnel: what nobody below it expected is logged once, with its traceback, in the log
    # file; the person reads where to look, never the traceback.
    site = install_toy(tmp_path, BROKEN_DOCTOR)
    config = write_config(tmp_path, {"toy": {"enabled": True, "folder": str(tmp_path)}})
    doctor = await relay_processes(config, "doctor", PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    assert await doctor.exited() == 1, doctor.stderr
    assert f"something went wrong inside the relay; details are in {doctor.log_path}" in doctor.stderr
    assert "Traceback" not in doctor.stderr and "has a bug" not in doctor.stderr
    assert doctor.log().count("Traceback") == 1
    assert "RuntimeError: the toy's doctor has a bug" in doctor.log()


BROKEN_CLOSE = """

_launch = launch


async def launch(host: Host, settings: ToySettings) -> Launched:
    relay = await _launch(host, settings)

    async def close() -> None:
        raise RuntimeError("the toy's close has a bug")

    relay.close = close
    return relay


PLUGIN = SurfacePlugin(name="toy", settings=ToySettings, launch=launch, check=check)
"""


async def test_a_surface_package_failing_to_close_is_logged_once_and_the_relay_still_stops_cleanly(
        relay_processes: Spawn, tmp_path: Path) -> None:
    chat = tmp_path / "chat"
    chat.mkdir()
    site = install_toy(tmp_path, BROKEN_CLOSE)
    config = write_config(tmp_path, {"toy": {"enabled": True, "folder": str(chat), "allowed_user_ids": ["alice"],
                                             "poll_s": 0.05}})
    relay = await relay_processes(config, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    write(chat, id="1", chat="c1", user="alice", text="text hello")
    await until(lambda: any("hello" in t for t in shown(chat).values()), "answered", timeout=HANG_GUARD_S)
    assert await relay.stop() == 0, relay.stderr
    assert "acp-relay: stopped cleanly" in relay.stderr
    assert "Traceback" not in relay.stderr and "went wrong" not in relay.stderr
    log = relay.log()
    assert log.count("toy: close failed while shutting down") == 1
    assert log.count("Traceback") == 1 and "RuntimeError: the toy's close has a bug" in log
