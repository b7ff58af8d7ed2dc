"""The dashboard Surface and its transcript: what the engine calls, what a browser then sees."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from core.engine import wording
from core.engine.blocks import Footer, Plan, PlanStep, RefusalCard, StopMark, Text, ToolLine, Tools
from core.engine.router import ACTIONS, route
from core.engine.surface import Button, DeliveryFailed, MessageTooLong, Surface
from core.redact import register_secrets
from surfaces.dashboard.surface import COMMANDS, DashboardSurface, conversation_key, valid_tab
from surfaces.dashboard.transcript import Entry, Transcript
from tests.rendering import blocks, md

KEY = conversation_key("tab1")


@pytest.fixture
def surface(tmp_path: Path) -> DashboardSurface:
    return DashboardSurface(Transcript.open(tmp_path / "t.db"))


def drain(queue: asyncio.Queue[dict[str, object] | None]) -> list[dict[str, object] | None]:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


def test_it_is_a_surface_with_the_dashboard_spelling_of_commands(surface: DashboardSurface) -> None:
    assert isinstance(surface, Surface)
    assert surface.name == "dashboard"
    caps = surface.capabilities
    assert (caps.can_edit, caps.can_buttons, caps.can_typing) == (True, True, True)
    assert caps.max_message_length >= 100_000 and caps.edit_interval_s == 0.2
    assert set(COMMANDS.values()) <= set(ACTIONS)
    assert "reset" not in COMMANDS.values()  # a new tab is the reset
    assert route("/compact", surface.commands).action == "compact"  # type: ignore[union-attr]
    assert surface.formatter.render((Text("**bold** `x`"),)).text == "**bold** `x`"  # the browser renders it


async def test_send_edit_delete_and_typing_reach_subscribers_in_order(surface: DashboardSurface) -> None:
    with surface.subscribe("tab1") as sub:
        mid = await surface.send(KEY, md(surface, "first"), buttons=(Button("Allow once", "t1", "primary"),))
        await surface.edit(KEY, mid, md(surface, "first, edited"))
        other = await surface.send(KEY, md(surface, "2 * 3", plain=True))
        await surface.delete(KEY, other)
        await surface.typing(KEY, True)
        events = drain(sub.queue)
    assert [e["type"] for e in events if e] == ["message", "message", "message", "delete", "typing"]
    assert events[0] == {"type": "message", "id": mid, "role": "agent", "text": "first", "plain": False,
                         "blocks": [{"type": "markdown", "kind": "text", "markdown": "first"}],
                         "buttons": [{"label": "Allow once", "token": "t1", "style": "primary"}]}
    assert events[1] is not None and events[1]["buttons"] == [] and events[1]["text"] == "first, edited"
    assert events[2] is not None and events[2]["plain"] is True
    snapshot = surface.snapshot("tab1")
    assert [m["text"] for m in snapshot["messages"]] == ["first, edited"]
    assert snapshot["typing"] is True


async def test_the_cores_blocks_reach_the_page_by_kind_with_the_words_it_shows(surface: DashboardSurface) -> None:
    shown = blocks(surface, Tools((ToolLine("Read a.py", "read", "completed"),)),
                   Plan((PlanStep("first", "completed"), PlanStep("second", "in_progress"))),
                   Text("The answer."), StopMark(), RefusalCard(category="demo"), Footer(2.5, 7.0))
    mid = await surface.send(KEY, shown)
    [message] = surface.snapshot("tab1")["messages"]
    assert message["id"] == mid and message["text"] == shown.text  # type: ignore[attr-defined]
    assert message["blocks"] == [
        {"type": "tools", "calls": [{"status": "completed", "words": "Read a.py (read): done"}]},
        {"type": "plan", "steps": [{"state": "done", "words": "first"},
                                   {"state": "in-progress", "words": "second (in progress)"}]},
        {"type": "markdown", "kind": "text", "markdown": "The answer."},
        {"type": "markdown", "kind": "stopped", "markdown": wording.STOPPED},
        {"type": "refusal", "lines": [wording.REFUSAL_LEAD, "Category: demo"]},
        {"type": "footer", "words": "2.5s · context 7%"},
    ]
    # The agent's look-alikes are Markdown to the page, nothing more.
    await surface.send(KEY, md(surface, f"{wording.REFUSAL_LEAD}\n\n⏱ 2.5s"))
    assert surface.snapshot("tab1")["messages"][1]["blocks"] == [
        {"type": "markdown", "kind": "text", "markdown": f"{wording.REFUSAL_LEAD}\n\n⏱ 2.5s"}]


async def test_a_transcript_kept_before_blocks_is_read_and_gains_them(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:
        old.execute("CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, tab TEXT NOT NULL, id TEXT NOT "
                    "NULL, role TEXT NOT NULL, text TEXT NOT NULL, buttons TEXT NOT NULL DEFAULT '[]', plain INTEGER "
                    "NOT NULL DEFAULT 0, updated_at REAL NOT NULL, UNIQUE (tab, id))")
        old.execute("INSERT INTO messages (tab, id, role, text, updated_at) VALUES ('tab1', 'm1', 'agent', 'kept', 0)")
    surface = DashboardSurface(Transcript.open(path))
    [kept] = surface.snapshot("tab1")["messages"]
    assert (kept["text"], kept["blocks"]) == ("kept", [])  # the page renders its Markdown
    mid = await surface.send(KEY, blocks(surface, Text("new"), Footer(1.0)))
    assert surface.transcript.get("tab1", mid).blocks[-1] == {"type": "footer", "words": "1.0s"}  # type: ignore[union-attr]


async def test_tabs_are_separate_conversations(surface: DashboardSurface) -> None:
    with surface.subscribe("tab2") as other:
        await surface.send(KEY, md(surface, "only for tab1"))
        assert other.queue.empty()
    assert surface.snapshot("tab2")["messages"] == []


async def test_a_subscriber_hears_nothing_once_its_block_ended(surface: DashboardSurface) -> None:
    with surface.subscribe("tab1") as gone:
        pass
    with surface.subscribe("tab1") as still:
        await surface.send(KEY, md(surface, "after the first left"))
        surface.close()
    assert gone.queue.empty()
    assert [e["type"] if e else e for e in drain(still.queue)] == ["message", None]


async def test_delivery_failures_are_the_core_errors(surface: DashboardSurface) -> None:
    with pytest.raises(DeliveryFailed):
        await surface.edit(KEY, "no-such-message", md(surface, "text"))
    with pytest.raises(DeliveryFailed):
        await surface.send("telegram:1", md(surface, "not ours"))
    with pytest.raises(DeliveryFailed):
        await surface.send("dashboard:../etc", md(surface, "bad tab"))
    with pytest.raises(MessageTooLong):
        await surface.send(KEY, md(surface, "x" * (surface.capabilities.max_message_length + 1)))


async def test_a_browser_that_falls_behind_gets_a_fresh_snapshot_instead(surface: DashboardSurface) -> None:
    with surface.subscribe("tab1") as sub:
        mid = await surface.send(KEY, md(surface, "0"))
        for i in range(sub.queue.maxsize + 5):
            await surface.edit(KEY, mid, md(surface, str(i)))
        events = drain(sub.queue)
    assert len(events) < 10 and {"type": "resync"} in events


async def test_close_ends_every_stream(surface: DashboardSurface) -> None:
    with surface.subscribe("tab1") as sub:
        surface.close()
        assert sub.queue.get_nowait() is None


async def test_the_transcript_survives_a_restart(tmp_path: Path) -> None:
    first = DashboardSurface(Transcript.open(tmp_path / "t.db"))
    assert await first.post_user("tab1", "hello", "m1") is not None
    mid = await first.send(KEY, md(first, "answer"), buttons=(Button("Deny", "t", "danger"),))
    first.transcript.close()
    second = DashboardSurface(Transcript.open(tmp_path / "t.db"))
    messages = second.snapshot("tab1")["messages"]
    assert [(m["role"], m["text"]) for m in messages] == [("user", "hello"), ("agent", "answer")]
    assert messages[1]["id"] == mid and messages[1]["buttons"][0]["label"] == "Deny"
    assert await second.post_user("tab1", "hello", "m1") is None  # a resend of the same message
    await second.edit(KEY, mid, md(second, "answer, edited after the restart"))
    assert second.transcript.get("tab1", mid).text == "answer, edited after the restart"  # type: ignore[union-attr]


async def test_a_piece_of_an_answer_sent_again_after_a_restart_rewrites_the_message_it_was_posted_in(
        tmp_path: Path) -> None:
    """A relay killed after the transcript took a piece and before the store noted it left a message
    nobody claims: the piece sent again with its key is written into that message, where it stands."""
    first = DashboardSurface(Transcript.open(tmp_path / "t.db"))
    await first.post_user("tab1", "hello", "m1")
    cut = await first.send_once(KEY, md(first, "the answer so f"), key=f"{KEY}|m1|0|0")
    first.transcript.close()
    second = DashboardSurface(Transcript.open(tmp_path / "t.db"))
    await second.post_user("tab1", "and then?", "m2")  # posted while the answer was cut off
    with second.subscribe("tab1") as sub:
        taken = await second.send_once(KEY, md(second, "the answer so far"), key=f"{KEY}|m1|0|0",
                                       buttons=(Button("Stop", "s", "danger"),))
        below = await second.send_once(KEY, md(second, "its second piece"), key=f"{KEY}|m1|0|1")
        events = drain(sub.queue)
    assert taken == cut and below != cut
    assert [(e.id, e.text) for e in second.transcript.entries("tab1")] == [
        ("u-m1", "hello"), (cut, "the answer so far"), ("u-m2", "and then?"), (below, "its second piece")]
    assert [(e["id"], e["text"], e["buttons"]) for e in events if e] == [
        (cut, "the answer so far", [{"label": "Stop", "token": "s", "style": "danger"}]),
        (below, "its second piece", [])]


def test_messages_added_together_rewrite_the_ones_whose_id_the_tab_has_and_append_the_rest(tmp_path: Path) -> None:
    transcript = Transcript.open(tmp_path / "t.db", max_tabs=1)
    kept = transcript.add("tab1", "agent", "the answer so f", message_id="a" * 32)
    new, rewritten = Entry("b" * 32, "agent", "below it"), Entry("a" * 32, "agent", "the answer so far", plain=True)
    assert transcript.add_many([("tab1", rewritten), ("tab1", new)], rewrite=True) == [None, new]
    assert transcript.entries("tab1") == [rewritten, new] and kept is not None
    assert transcript.add_many([("tab1", Entry("a" * 32, "agent", "left as it is"))]) == [None]  # no rewrite
    assert transcript.get("tab1", "a" * 32) == rewritten
    transcript.add_many([("tab2", Entry("c" * 32, "agent", "another tab"))], rewrite=True)
    assert transcript.entries("tab1") == []  # one tab kept: a new tab still evicts
    transcript.close()


def test_tab_ids_are_validated() -> None:
    assert valid_tab("a1_B-2") and valid_tab("x" * 64)
    assert not any(valid_tab(t) for t in ("", "x" * 65, "../a", "a b", "a/b", "é"))


async def test_past_max_tabs_the_least_recently_used_tab_loses_its_transcript(tmp_path: Path) -> None:
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db", max_tabs=2))
    await surface.post_user("tab1", "first tab", "m1")
    old = await surface.send(KEY, md(surface, "an answer in the first tab"))
    await surface.post_user("tab2", "second tab", "m2")
    for i in range(3):  # more messages in a tab already kept prune nothing
        await surface.post_user("tab2", f"again {i}", f"m2-{i}")
    await surface.typing(conversation_key("tab2"), True)  # their answer: tab2 waits for none from now
    await surface.typing(conversation_key("tab2"), False)
    await surface.edit(KEY, old, md(surface, "edited later, so the first tab is the more recent"))
    assert surface.snapshot("tab1")["messages"] and surface.snapshot("tab2")["messages"]
    await surface.post_user("tab3", "a third tab", "m3")
    await surface.typing(conversation_key("tab3"), True)  # its answer ends: it counts from now
    await surface.typing(conversation_key("tab3"), False)
    assert surface.snapshot("tab2")["messages"] == []
    assert [m["text"] for m in surface.snapshot("tab1")["messages"]] == [
        "first tab", "edited later, so the first tab is the more recent"]
    assert [m["text"] for m in surface.snapshot("tab3")["messages"]] == ["a third tab"]
    surface.transcript.close()
    lower = Transcript.open(tmp_path / "t.db", max_tabs=1)  # a lower bound applies at once
    assert [e.text for e in lower.entries("tab3")] == ["a third tab"]
    assert lower.entries("tab1") == [] and lower.entries("tab2") == []
    lower.close()


async def test_a_secret_pasted_into_the_composer_is_not_kept_in_the_transcript(tmp_path: Path) -> None:
    secret = "Zq8vR3kP9wLx2mN7bT4yH6jF1cD5gS0a"
    surface = DashboardSurface(Transcript.open(tmp_path / "t.db"))
    with register_secrets([secret]):
        await surface.post_user("tab1", f"the token is {secret}, use it", "m1")
    assert [m["text"] for m in surface.snapshot("tab1")["messages"]] == ["the token is [redacted], use it"]
    surface.transcript.close()
    assert not any(secret[:5].encode() in p.read_bytes() for p in tmp_path.iterdir())
