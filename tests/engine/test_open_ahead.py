"""After ``/new`` or a switch of agent or project the next session is opened while the person writes, so
their next message's answer waits for no ``session/new`` (claude-agent-acp 0.101 takes 0.4 s, its Zed
build 1 s) and no agent start. The scripted agent (a real subprocess) answers ``session/new`` slowly here
(``--new-delay``), as those do."""

from __future__ import annotations

from pathlib import Path

from core.engine import switch_wording

from .conftest import KEY, Relay, RelayFactory, read_frames, until
from .test_engine_switches import other_agent


def _prompted(frames: list[dict[str, object]]) -> list[object]:
    return [f["params"]["sessionId"] for f in frames if f.get("method") == "session/prompt"]  # type: ignore[index]


def _opened_other_than(r: Relay, old: str | None) -> bool:
    return r.session_id() not in (None, old)


async def test_new_opens_the_next_session_before_the_next_message(relay: RelayFactory) -> None:
    r = await relay("--new-delay", "0.2")
    await r.ask("text hello")
    old = r.session_id()

    await r.send("/new")
    await until(lambda: _opened_other_than(r, old), what="the new session opened with no message sent")
    ahead, opened = r.session_id(), r.methods().count("session/new")
    assert opened == 2

    reply = await r.ask("text hi")
    assert reply.text.startswith("hi")
    assert r.methods().count("session/new") == opened, "the message found its session open"
    assert _prompted(r.frames())[-1] == ahead == r.session_id()


async def test_a_message_sent_while_the_session_is_being_opened_waits_for_that_one(relay: RelayFactory) -> None:
    r = await relay("--new-delay", "0.5")
    await r.ask("text hello")
    await r.send("/new")
    reply = await r.ask("text right away")  # the agent is still answering the session/new made for it
    assert reply.text.startswith("right away")
    assert r.methods().count("session/new") == 2, "one session for the new conversation, not two"
    assert _prompted(r.frames())[-1] == r.session_id()


async def test_new_twice_in_a_row_closes_the_session_opened_for_the_first(relay: RelayFactory) -> None:
    """The second reset waits for the session the first is opening, closes it, and only then starts the
    new conversation: the opening cannot write its record over the second reset."""
    r = await relay("--close", "--new-delay", "0.3")
    await r.ask("text hello")
    first = r.session_id()
    generation = r.store.get_conversation(KEY).generation  # type: ignore[union-attr]

    await r.send("/new")
    await until(lambda: r.methods().count("session/new") == 2, what="the agent asked for the next session")
    await r.send("/new")  # while the agent is still opening the first /new's session (0.3 s)
    reply = await r.ask("text hi")
    assert reply.text.startswith("hi")

    closed = [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/close"]
    news = r.methods().count("session/new")
    assert news == 3 and len(closed) == 2 and closed[0] == first
    assert _prompted(r.frames())[-1] == r.session_id() not in closed
    assert r.store.get_conversation(KEY).generation == generation + 2  # type: ignore[union-attr]


async def test_a_notice_of_the_opening_is_said_by_the_next_answer(relay: RelayFactory) -> None:
    """A mode chosen earlier that the new session does not take: said above the next answer, not lost with
    the opening that found it."""
    r = await relay("--locked-modes")
    await r.ask("text hello")
    record = r.store.get_conversation(KEY)
    assert record is not None
    record.mode = "plan"  # chosen when the agent still let it be set
    r.store.save_conversation(record)

    await r.send("/new")
    await until(lambda: r.methods().count("session/set_mode") == 1, what="the opening tried the mode")
    reply = await r.ask("text hi")
    assert reply.text.startswith(switch_wording.mode_not_kept_text("plan"))
    assert "hi" in reply.text
    assert r.texts().count(reply.text) == 1
    again = await r.ask("text again")
    assert not again.text.startswith("The mode"), "said once"


async def test_switching_agent_starts_it_before_the_next_message(relay: RelayFactory, tmp_path: Path) -> None:
    r = await relay(agents=other_agent(tmp_path))
    other = tmp_path / "other-record.jsonl"
    await r.ask("text hello")
    switched = await r.send("/agent other")
    assert "Switched to the agent other" in r.reply_to(switched).text

    await until(lambda: other.exists() and "session/new" in [f.get("method") for f in read_frames(other)],
                what="the other agent started and its session opened, with no message sent")
    reply = await r.ask("text on the other one")
    assert reply.text.startswith("on the other one")
    methods = [f.get("method") for f in read_frames(other)]
    assert methods.count("session/new") == 1 and methods.count("session/prompt") == 1


async def test_an_agent_that_cannot_start_is_said_by_the_next_message_not_by_the_opening(
        relay: RelayFactory, tmp_path: Path) -> None:
    missing = {"gone": {"command": str(tmp_path / "no-such-agent"), "cwd": str(tmp_path)}}
    r = await relay(agents={**other_agent(tmp_path), **missing})
    await r.ask("text hello")
    switched = r.reply_to(await r.send("/agent gone")).text
    assert "Switched to the agent gone" in switched
    msg = await r.send("text hi")
    await r.idle()
    answer = r.answer(msg)
    assert "no-such-agent' was not found on PATH (agents.gone.command)" in answer
    assert "Traceback" not in "\n".join(r.texts())
    assert r.texts().index(switched) == len(r.texts()) - 2, "the opening said nothing in between"


async def test_a_session_opened_ahead_and_never_used_is_not_listed_and_is_closed_when_left(
        relay: RelayFactory) -> None:
    r = await relay("--sessions")  # session/list, session/resume and session/close
    await r.ask("title Desk\ntext at the desk")
    desk = r.session_id()
    await r.send("/new")
    await until(lambda: _opened_other_than(r, desk), what="the next session opened ahead")
    ahead = r.session_id()

    listing = await r.send("/sessions")
    assert [b.label.split(" · ")[0] for b in r.reply_to(listing).buttons] == ["Desk"], "nothing to continue in it"
    chosen = await r.press(r.reply_to(listing).buttons[0].token)
    assert chosen.text.startswith("Continuing the session \u201cDesk\u201d")
    closed = [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/close"]
    assert closed == [desk, ahead], "the desk's by /new, the empty one when the desk's was chosen"
    reply = await r.ask("text back at the desk")
    assert reply.text.startswith("back at the desk") and _prompted(r.frames())[-1] == desk
