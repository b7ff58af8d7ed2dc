"""The Stop button under an answer while it is written: pressed, the turn ends as ``/stop`` ends it; it is
gone from every message once the answer is final, and a press after that changes nothing."""

from __future__ import annotations

from core.engine import wording
from tests.discord.harness import ALICE, MALLORY, Relay, RelayFactory, until
from tests.fakes.discord_api import EPHEMERAL


def answers(r: Relay, channel: int) -> list[dict]:
    """The bot's messages everyone sees (not the answers to a press, which only the presser sees)."""
    return [m for m in r.fake.bot_messages(channel) if not m["flags"] & EPHEMERAL]


def stop_buttons(r: Relay, channel: int) -> list[tuple[int, str]]:
    """(message id, custom id) of every Stop button the channel shows now."""
    return [(int(m["id"]), custom_id) for m in r.fake.bot_messages(channel)
            for label, custom_id in r.fake.buttons(m) if label == "Stop"]


async def press(r: Relay, channel: int, uid: int, message_id: int, custom_id: str) -> str:
    inter = await r.fake.press(channel, uid, message_id, custom_id)
    await until(lambda: r.fake.interactions[inter].original is not None and not r.fake.thinking(), "press answered")
    answer = r.fake.interactions[inter].original
    assert answer is not None and answer["flags"] & EPHEMERAL  # only the presser sees it
    return str(answer["content"])


async def test_stop_under_a_streamed_answer_ends_the_turn_and_goes_away(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text working on it\nhang")
    await until(lambda: stop_buttons(r, dm), "the answer with its Stop button")
    [(message_id, custom_id)] = stop_buttons(r, dm)
    assert custom_id.startswith("acp:")
    refused = await press(r, dm, MALLORY, message_id, custom_id)  # not on the allow-list
    assert f"Your user id is {MALLORY}" in refused
    assert "session/cancel" not in r.methods()
    assert await press(r, dm, ALICE, message_id, custom_id) == "Stopped."
    await r.settled()
    assert r.methods().count("session/cancel") == 1
    [answer] = answers(r, dm)
    assert answer["content"].startswith("working on it") and "Stopped." in answer["content"]
    assert r.fake.buttons(answer) == [], "the Stop button went with the answer's end"
    stale = await press(r, dm, ALICE, message_id, custom_id)  # a client that still shows it
    assert stale == "This button has expired, so the tap changed nothing."
    assert r.methods().count("session/cancel") == 1
    assert "Nothing is running" not in r.fake.transcript()


async def test_a_long_answer_keeps_stop_only_under_its_last_message_and_none_once_done(relay: RelayFactory) -> None:
    """An answer past Discord's 2,000 characters goes on in a second message: the Stop button moves down
    with it, and the finished answer shows no button at all."""
    r = await relay()
    dm = r.fake.dm(ALICE)
    long_line = " ".join(f"word{i}" for i in range(400))  # about 3,100 characters
    await r.fake.say(dm, ALICE, f"text {long_line}\nsleep 1.5\ntext  the end")
    await until(lambda: len(r.fake.bot_messages(dm)) == 2 and stop_buttons(r, dm), "two messages, streaming")
    first, second = r.fake.bot_messages(dm)
    assert [mid for mid, _ in stop_buttons(r, dm)] == [int(second["id"])]
    assert r.fake.buttons(first) == []
    await until(lambda: "the end" in r.fake.bot_messages(dm)[-1]["content"], "the whole answer")
    await r.settled()
    assert stop_buttons(r, dm) == []
    assert "session/cancel" not in r.methods()
    assert all(r.fake.buttons(m) == [] for m in answers(r, dm))


async def test_a_short_answer_ends_without_a_button_and_without_an_edit_to_spare(relay: RelayFactory) -> None:
    """An answer finished at once: posted with its Stop button, then one edit (the one that adds its
    footer) shows the whole answer and takes the button away; no edit only for the button."""
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "hello")
    await until(lambda: any("echo: hello" in t for t in r.bot_texts(dm)), "the answer")
    await r.settled()
    [answer] = answers(r, dm)
    assert r.fake.buttons(answer) == []
    assert answer.get("_edits", 0) <= 1
    posted = r.fake.calls_to("POST", f"/channels/{dm}/messages")
    assert [c["components"][0]["components"][0]["label"] for c in posted] == ["Stop"]


async def test_an_answer_ended_by_a_failure_loses_its_stop_button_too(relay: RelayFactory) -> None:
    """The agent dies mid-answer: the answer ends with the sentence that says so, and no Stop button is
    left under it."""
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text working on it\nsleep 0.5\ndie 1")
    await until(lambda: stop_buttons(r, dm), "the answer with its Stop button")
    await until(lambda: "⏱" in answers(r, dm)[-1]["content"], "the answer ended", timeout=30)
    await r.settled()
    assert stop_buttons(r, dm) == []
    [answer] = answers(r, dm)
    assert answer["content"].startswith("working on it") and "Traceback" not in answer["content"]


async def test_stop_on_an_agent_that_ignores_the_cancel_is_answered_stopping_and_the_chat_says_the_rest(
        relay: RelayFactory) -> None:
    """The presser is answered while the platform still waits ("Stopping…"); the stop goes on, and the
    chat says how it ended (the agent never confirmed it: its session is set aside)."""
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "deaf working on it")
    await until(lambda: stop_buttons(r, dm), "the answer with its Stop button")
    [(message_id, custom_id)] = stop_buttons(r, dm)
    assert await press(r, dm, ALICE, message_id, custom_id) == "Stopping…"
    await until(lambda: any(wording.STOP_UNCONFIRMED in m["content"] for m in answers(r, dm)), "the stop's outcome",
                timeout=30)
    await r.settled()
    assert stop_buttons(r, dm) == []
    assert r.methods().count("session/cancel") == 1
