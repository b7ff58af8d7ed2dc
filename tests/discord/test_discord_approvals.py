"""Approvals as buttons: one-time custom ids, only allowed people, stale clicks answered "expired"."""

from __future__ import annotations

from tests.discord.harness import ALICE, BOB, MALLORY, Relay, RelayFactory, until
from tests.fakes.discord_api import EPHEMERAL

ASK = "tool t1 execute rm -rf build\npermission t1\ntext after the decision"


def is_prompt(r: Relay, message: dict) -> bool:
    """A prompt with buttons (an approval, a form): not the answer being written, whose button is Stop."""
    return [label for label, _ in r.fake.buttons(message)] not in ([], ["Stop"])


def prompt_message(r: Relay, channel: int) -> dict:
    found = [m for m in r.fake.bot_messages(channel) if is_prompt(r, m)]
    assert found, "no approval prompt with buttons"
    found[-1]["_first_buttons"] = r.fake.buttons(found[-1])
    return found[-1]


async def pressed(r: Relay, channel: int, uid: int, message: dict, label: str) -> dict:
    """Press ``label`` as it was first shown (a person's client may still show a button that is gone)."""
    custom_id = dict(message["_first_buttons"])[label]
    inter = await r.fake.press(channel, uid, int(message["id"]), custom_id)
    await until(lambda: r.fake.interactions[inter].original is not None and not r.fake.thinking(), "press answered")
    answer = r.fake.interactions[inter].original
    assert answer is not None and answer["flags"] & EPHEMERAL  # only the presser sees it
    return answer


async def test_an_allowed_peer_approves_and_a_second_click_is_expired_and_changes_nothing(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, ASK)
    await until(lambda: any(is_prompt(r, m) for m in r.fake.bot_messages(dm)), "the approval prompt")
    prompt = prompt_message(r, dm)
    assert [label for label, _ in r.fake.buttons(prompt)] == [
        "Allow once", "Allow `rm -rf build` for this session", "Deny"]
    assert all(cid.startswith("acp:") for _, cid in r.fake.buttons(prompt))
    stranger = await pressed(r, dm, MALLORY, prompt, "Deny")
    assert f"Your user id is {MALLORY}" in stranger["content"]
    assert r.fake.buttons(r.fake.channels[dm].messages[int(prompt["id"])])  # still waiting
    first = await pressed(r, dm, BOB, prompt, "Allow once")  # an allowed peer may answer
    assert first["content"].startswith("Allowed once")
    await r.settled()
    assert any("permission:selected:allow-once" in t for t in r.bot_texts(dm))
    settled = r.fake.channels[dm].messages[int(prompt["id"])]
    assert r.fake.buttons(settled) == [] and "Allowed once" in settled["content"]
    stale = await pressed(r, dm, ALICE, prompt, "Deny")
    assert stale["content"] == "This button has expired, so the tap changed nothing."
    assert "Allowed once" in r.fake.channels[dm].messages[int(prompt["id"])]["content"]
    answers = [t for t in r.bot_texts(dm) if "permission:" in t]
    assert len(answers) == 1 and "after the decision" in answers[0]


async def test_a_click_after_a_restart_is_expired_and_changes_nothing(relay: RelayFactory) -> None:
    r = await relay(timeouts={"approval_s": 600})
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, ASK)
    await until(lambda: any(is_prompt(r, m) for m in r.fake.bot_messages(dm)), "the approval prompt")
    prompt = prompt_message(r, dm)
    await r.restart()  # the unfinished message is answered again: it asks again, with new buttons
    await until(lambda: len([m for m in r.fake.bot_messages(dm) if is_prompt(r, m)]) == 2, "asked again")
    fresh = prompt_message(r, dm)
    assert fresh["id"] != prompt["id"]
    stale = await pressed(r, dm, ALICE, prompt, "Allow once")
    assert stale["content"] == "This button has expired, so the tap changed nothing."
    assert r.fake.buttons(r.fake.channels[dm].messages[int(fresh["id"])])  # the new prompt still waits
    await pressed(r, dm, ALICE, fresh, "Deny")
    await r.settled()
    texts = r.bot_texts(dm)
    assert any("permission:selected:reject" in t for t in texts)
    assert not any("permission:selected:allow" in t for t in texts)
