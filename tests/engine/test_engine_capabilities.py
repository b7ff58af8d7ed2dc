"""The engine respects what the agent can take, and reports where it works."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from core.engine import wording
from core.engine.surface import Attachment

from .conftest import KEY, RelayFactory, prompt_text


async def _ask_with_image(r, text: str):  # type: ignore[no-untyped-def]
    msg = dataclasses.replace(r.message(text), attachments=(Attachment("image", "image/png", b"\x89PNG..."),))
    await r.engine.handle_message(msg)
    await r.idle()
    return r.reply_to(msg)


async def test_an_image_reaches_an_agent_that_takes_images(relay: RelayFactory) -> None:
    r = await relay()
    reply = await _ask_with_image(r, "report_images")
    assert "images:1" in reply.text and wording.IMAGES_NOT_SUPPORTED not in reply.text


async def test_an_image_is_held_back_from_an_agent_that_does_not_take_images_and_the_person_is_told(
        relay: RelayFactory) -> None:
    r = await relay("--no-images")
    reply = await _ask_with_image(r, "report_images")
    assert "images:0" in reply.text and wording.IMAGES_NOT_SUPPORTED in reply.text
    prompts = [f for f in r.frames() if f.get("method") == "session/prompt"]
    assert [b["type"] for b in prompts[-1]["params"]["prompt"]] == ["text"]
    assert prompt_text(prompts[-1]) == "report_images"


async def test_the_status_names_the_resolved_folder_even_before_the_first_message(relay: RelayFactory) -> None:
    r = await relay()
    folder = r.engine.status(KEY).cwd
    assert Path(folder).is_absolute() and Path(folder) == r.workdir.resolve()
    await r.ask("text hi")
    assert r.engine.status(KEY).cwd == folder
