"""Delivery through a real engine: splitting, 429s, markup fallback, and the answer is never lost.

what-users-hit 1 (too long, fences broken), 2 (429 ignored, answer lost), 5 (markup rejected),
6 (a delivery failure reported as a generation failure).
"""

from __future__ import annotations

import json
import logging
import re

import pytest

from core.engine import wording
from core.engine.blocks import Footer, Text
from core.engine.surface import MarkupRejected, RateLimited, measure
from tests.engine.conftest import KEY, RelayFactory, make_surface, until
from tests.full_store import fill

CODE_LINES = [f"print('line {i:02d} of the fenced block')" for i in range(30)]


def chunk(text: str) -> str:
    """A script step streaming ``text`` verbatim (newlines included) as one agent_message_chunk."""
    return "update " + json.dumps({"sessionUpdate": "agent_message_chunk",
                                   "content": {"type": "text", "text": text}})


def fence_lines(text: str) -> int:
    return len(re.findall(r"(?m)^ {0,3}```", text))


async def test_a_long_reply_is_split_at_the_limit_without_breaking_its_code_fence(relay: RelayFactory) -> None:
    surface = make_surface(max_message_length=300, length_unit="chars")
    r = await relay(surface=surface)
    code = "```python\n" + "\n".join(CODE_LINES) + "\n```\n"
    script = "\n".join([chunk("Here is the program. It prints thirty lines!\n\n"),
                        chunk(code[: len(code) // 2]), "sleep 0.1", chunk(code[len(code) // 2:]),
                        chunk("\nThat is all. Done!")])
    reply = await r.ask(script)

    pieces = [m for m in r.messages() if m.message_id >= reply.message_id]
    assert len(pieces) > 2, "the reply fits no single message, so it must be split"
    for piece in pieces:
        assert measure(piece.rendered, "chars") <= 300, "the limit applies after rendering"
        assert fence_lines(piece.text) % 2 == 0, f"a piece leaves a fence open: {piece.text!r}"
        assert not piece.plain, "a balanced piece parses as markup; no plain-text fallback needed"
    shown = "\n".join(p.text for p in pieces)
    positions = [shown.index(line) for line in CODE_LINES]
    assert positions == sorted(positions), "every code line arrives once, in order"
    assert "That is all" in pieces[-1].text
    assert all(line in "\n".join(p.text for p in pieces if "```" in p.text) for line in CODE_LINES), \
        "every code line stays inside a fence"


async def test_a_429_while_streaming_waits_and_the_final_answer_arrives(relay: RelayFactory) -> None:
    r = await relay()
    r.surface.fail_next("edit", RateLimited(0.01), times=3)
    reply = await r.ask("text alpha\nsleep 0.15\nchunks 3\nsleep 0.15\ntext omega")
    assert "alphaw0 w1 w2 omega" in reply.text
    assert not r.surface._failures["edit"], "the streaming edits met the 429s"
    assert sum(1 for c in r.surface.calls if c[0] == "edit") >= 4, "edits went on after the 429s"


async def test_a_429_on_the_final_edit_is_waited_out_not_lost(relay: RelayFactory) -> None:
    surface = make_surface()
    r = await relay(surface=surface)
    msg = await r.send("text first\nsleep 0.3\ntext last")
    await until(lambda: r.replies_to(msg) and "first" in r.reply_to(msg).text, what="first flush")
    surface.fail_next("edit", RateLimited(0.02), times=5)
    await r.idle()
    assert "firstlast" in r.reply_to(msg).text
    assert "⏱" in r.reply_to(msg).text, "the final state (with its footer) was delivered"


async def test_markup_the_platform_rejects_is_resent_as_plain_text_without_escapes(
        relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("text Multiply: 2 * 3 = 6. Really!")
    assert reply.plain, "an odd '*' cannot be parsed: the reply falls back to plain text"
    assert "2 * 3 = 6. Really!" in reply.rendered
    assert "\\" not in reply.rendered, "plain text shows no markup escapes"


async def test_an_injected_markup_rejection_of_the_only_send_falls_back_to_plain(relay: RelayFactory) -> None:
    surface = make_surface(can_edit=False)
    r = await relay(surface=surface)
    surface.fail_next("send", MarkupRejected("can't parse entities"))
    reply = await r.ask("text all **good** here")
    assert reply.plain and "all" in reply.text and "good here" in reply.text
    assert len(r.messages()) == 1, "the rejected send is retried as plain, not duplicated"


async def test_the_final_answer_is_kept_while_the_platform_is_down_and_redelivered_later(
        relay: RelayFactory) -> None:
    surface = make_surface()
    r = await relay(surface=surface)
    surface.down = True
    await r.send("text the precious answer")
    await until(lambda: r.store.pending_outbound(), what="the answer in the outbound ledger")
    [pending] = r.store.pending_outbound()
    assert pending.conversation_key == KEY
    assert "the precious answer" in pending.payload["text"]
    assert not r.with_text("the precious answer"), "nothing could be shown yet"

    surface.down = False
    await until(lambda: not r.store.pending_outbound(), what="the ledger drained")
    assert len(r.with_text("the precious answer")) == 1, "redelivered exactly once"


async def test_a_redelivered_answer_keeps_its_blocks_so_the_platform_shows_it_as_it_would_have(
        relay: RelayFactory) -> None:
    surface = make_surface()
    r = await relay(surface=surface)
    surface.down = True
    await r.send("text kept for later")
    await until(lambda: r.store.pending_outbound(), what="the answer in the outbound ledger")
    surface.down = False
    await until(lambda: not r.store.pending_outbound(), what="the ledger drained")
    [shown] = r.with_text("kept for later")
    assert [type(b) for b in shown.blocks] == [Text, Footer], "the footer is still the core's footer, not text"
    assert shown.text.startswith("kept for later\n\n⏱ ")


async def test_a_refused_answer_is_reported_as_a_delivery_failure_not_an_agent_failure(
        relay: RelayFactory) -> None:
    surface = make_surface()
    r = await relay(surface=surface)
    surface.refuse = lambda text: "unshowable" in text
    await r.send("text an unshowable answer")
    await r.idle()
    assert [p.payload["text"] for p in r.store.pending_outbound() if "unshowable" in p.payload["text"]]
    texts = r.texts()
    assert texts.count(wording.delivery_failure_text()) == 1, f"told once, as a delivery failure: {texts}"
    assert not [t for t in texts if "agent" in t.lower() and "fail" in t.lower()
                and t != wording.delivery_failure_text()], "never described as an agent failure"

    surface.refuse = lambda text: False
    await until(lambda: not r.store.pending_outbound(), what="the ledger drained")
    assert len(r.with_text("an unshowable answer")) == 1
    assert r.texts().count(wording.delivery_failure_text()) == 1, "the redelivery loop does not repeat it"



async def test_an_answer_the_chat_refuses_and_the_full_store_cannot_keep_is_said_lost_not_promised(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    """The chat will not take the answer and the store (its disk full) cannot keep it for later: the
    person is told it is lost, not that it will be sent again; the log has one warning, no traceback."""
    surface = make_surface()
    r = await relay(surface=surface)
    surface.refuse = lambda text: "unkeepable" in text
    with caplog.at_level(logging.WARNING):
        await r.send("sleep 0.3\ntext " + "unkeepable " * 600)  # longer than a page of the store
        fill(r.store)  # while the agent is still thinking
        await r.idle()
    texts = r.texts()
    assert texts.count(wording.delivery_lost_text()) == 1, texts
    assert wording.delivery_failure_text() not in texts
    assert not r.store.pending_outbound()
    assert [r.getMessage() for r in caplog.records if "for a later delivery" in r.getMessage()]
    assert [r.getMessage() for r in caplog.records if "could not be noted as given" in r.getMessage()]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
