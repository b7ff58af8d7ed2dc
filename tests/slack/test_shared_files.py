"""Files a person shares with a message in Slack, through the real slack-bolt and slack-sdk against the
fake: downloaded with the bot token (``files:read``), a text file reaches the agent as text and an
image as an image; what is not sent (not text, too large, refused by Slack, at a URL that is not
Slack's) is named above the answer. Before, every shared file was dropped without a word."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from core.surface_api import MAX_FILE_BYTES
from tests.fakes.slack_api import BOT_TOKEN

from .conftest import BOT_USER, CHANNEL, DM, TEAM, USER, SlackFactory, SlackRelayUnderTest, until

PNG = b"\x89PNG\r\n\x1a\n" + b"0" * 64


async def _share(relay: SlackRelayUnderTest, text: str, files: list[dict[str, Any]],
                 thread_ts: str | None = None) -> str:
    """A direct message (or a reply in the DM thread ``thread_ts``) sharing ``files``; returns its ts."""
    msg = relay.fake.user_message(USER, DM, text, thread_ts)
    await relay.deliver({"type": "message", "subtype": "file_share", "channel_type": "im", "user": USER, "text": text,
                         "ts": msg.ts, "channel": DM, "team": TEAM, "event_ts": msg.ts, "files": files,
                         **({"thread_ts": thread_ts} if thread_ts else {})})
    return msg.ts


def _prompt_blocks(relay: SlackRelayUnderTest) -> list[list[dict[str, Any]]]:
    path = relay.tmp / "record.jsonl"
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [f["params"]["prompt"] for f in frames if f.get("method") == "session/prompt"]


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_text_file_and_an_image_reach_the_agent_and_what_cannot_is_named(
        slack: SlackFactory, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    relay = await slack(mode=mode)
    fake = relay.fake
    files = [fake.shared_file("app.log", "text/plain", b"KeyError: 'x'\n"),
             fake.shared_file("shot.png", "image/png", PNG),
             fake.shared_file("core.bin", "application/octet-stream", b"\x7fELF\x00\x01"),
             fake.shared_file("huge.log", "text/plain", b"x" * (MAX_FILE_BYTES + 1))]
    ts = await _share(relay, "why does it fail?", files)
    await relay.settled(ts, DM)
    [blocks] = _prompt_blocks(relay)
    assert [b["type"] for b in blocks] == ["text", "text", "image"]
    assert blocks[1]["text"] == "Attached file: app.log\n```\nKeyError: 'x'\n```"
    assert blocks[2]["mimeType"] == "image/png"
    [answer] = relay.bot_texts(ts, DM)  # (the fake agent echoes the prompt's text)
    notice, echoed = answer.split("\n\n", 1)
    assert notice.startswith('Not sent to the agent: "core.bin", "huge.log".'), answer
    assert echoed.startswith("echo: why does it fail?") and "Attached file: app.log" in echoed, answer
    assert fake.downloads == [f"Bearer {BOT_TOKEN}"] * 3, "the file too large to send was not downloaded"
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"


async def test_a_file_slack_will_not_hand_over_is_named_and_the_log_names_the_scope(
        slack: SlackFactory, caplog: pytest.LogCaptureFixture) -> None:
    """An app installed before the manifest asked for files:read: Slack answers the download with its
    sign-in page (HTML, status 200), which must not reach the agent as the file."""
    relay = await slack()
    relay.fake.read_scope = False
    ts = await _share(relay, "text here it is", [relay.fake.shared_file("notes.txt", "text/plain", b"notes")])
    await relay.settled(ts, DM)
    assert relay.prompts() == ["text here it is"]
    [answer] = relay.bot_texts(ts, DM)
    assert answer.startswith('Not sent to the agent: "notes.txt".')
    assert "files:read" in caplog.text


async def test_the_token_goes_to_no_url_but_slacks(slack: SlackFactory, caplog: pytest.LogCaptureFixture) -> None:
    relay = await slack()
    forged = {**relay.fake.shared_file("a.txt", "text/plain", b"a"), "url_private_download": "http://127.0.0.2:9/a.txt"}
    ts = await _share(relay, "text hi", [forged])
    await relay.settled(ts, DM)
    assert relay.fake.downloads == [] and relay.prompts() == ["text hi"]
    assert relay.bot_texts(ts, DM)[0].startswith('Not sent to the agent: "a.txt".')
    assert "its URL is not Slack's (http://127.0.0.2:9)" in caplog.text


async def test_a_message_after_a_slow_download_waits_for_it(slack: SlackFactory) -> None:
    relay = await slack()
    first = await relay.dm("text first")
    await relay.settled(first.ts, DM)
    relay.fake.download_delay_s = 0.3
    sharing = asyncio.create_task(_share(relay, "with a file", [relay.fake.shared_file("a.txt", "text/plain",
                                                                                           b"a")], first.ts))
    await until(lambda: relay.fake.downloads, "the download started")
    later = relay.fake.user_message(USER, DM, "text after it", first.ts)
    await relay.deliver({"type": "message", "channel_type": "im", "user": USER, "text": later.text, "ts": later.ts,
                         "thread_ts": first.ts, "channel": DM, "team": TEAM, "event_ts": later.ts})
    await sharing
    await until(lambda: len(relay.prompts()) == 3, "all three answered")
    await relay.settled(first.ts, DM)
    assert [p.split("\n")[0] for p in relay.prompts()] == ["text first", "with a file", "text after it"]


async def test_a_file_named_by_its_id_alone_is_described_by_files_info_and_sent(slack: SlackFactory) -> None:
    """Slack Connect: the event carries ``"file_access": "check_file_info"`` and no URL."""
    relay = await slack()
    shared = relay.fake.shared_file("notes.txt", "text/plain", b"from the other company")
    ts = await _share(relay, "what does it say?", [{"id": shared["id"], "mode": "file_access",
                                                    "file_access": "check_file_info", "created": 0, "user": ""}])
    await relay.settled(ts, DM)
    assert relay.prompts() == ["what does it say?\nAttached file: notes.txt\n```\nfrom the other company\n```"]
    assert [name for name, _ in relay.fake.calls if name == "files.info"] == ["files.info"]


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_file_shared_with_a_mention_is_downloaded_once(slack: SlackFactory, mode: str) -> None:
    """Slack sends a mention twice (``app_mention``, then ``message``): the file it shares is fetched for
    the first alone, and the agent reads it once."""
    relay = await slack(mode=mode)
    fake = relay.fake
    files = [fake.shared_file("app.log", "text/plain", b"KeyError: 'x'\n")]
    msg = fake.user_message(USER, CHANNEL, f"<@{BOT_USER}> read it", None)
    base = {"user": USER, "text": msg.text, "ts": msg.ts, "channel": CHANNEL, "team": TEAM, "event_ts": msg.ts,
            "files": files}
    await relay.deliver({"type": "app_mention", **base})
    await relay.deliver({"type": "message", "subtype": "file_share", "channel_type": "channel", **base})
    await relay.settled(msg.ts, CHANNEL)
    assert len(_prompt_blocks(relay)) == 1 and fake.downloads == [f"Bearer {BOT_TOKEN}"]


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_file_whose_forgotten_mention_is_edited_in_reaches_the_agent_with_its_file(
        slack: SlackFactory, mode: str) -> None:
    """A file shared in a channel without the mention is nobody's; the edit that adds it makes the message
    the app's, read whole, its file too (before: its words alone)."""
    relay = await slack(mode=mode)
    files = [relay.fake.shared_file("app.log", "text/plain", b"KeyError: 'x'\n")]
    msg = relay.fake.user_message(USER, CHANNEL, "why does it fail?")
    await relay.deliver({"type": "message", "subtype": "file_share", "channel_type": "channel", "user": USER,
                         "text": msg.text, "ts": msg.ts, "channel": CHANNEL, "team": TEAM, "event_ts": msg.ts,
                         "files": files})
    assert relay.prompts() == [] and relay.fake.downloads == [], "nobody's: not even downloaded"
    await relay.edit(msg, f"<@{BOT_USER}> why does it fail?", files=files)
    await relay.settled(msg.ts)
    [blocks] = _prompt_blocks(relay)
    assert [b["type"] for b in blocks] == ["text", "text"]
    assert blocks[1]["text"] == "Attached file: app.log\n```\nKeyError: 'x'\n```"
