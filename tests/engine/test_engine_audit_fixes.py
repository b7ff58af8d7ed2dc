"""Behaviours added after the engine audit, through a real engine and the scripted agent:

* ``/compact`` is reported done only when the turn ended normally and no compaction failure was seen;
* an approval request the platform will not show cancels that tool call and says so, in words that
  never blame the agent;
* the outbound ledger keeps only the part of an answer that did not arrive;
* no secret reaches the chat, the approval prompt included;
* a surface that raises something other than a ``DeliveryError`` does not stall the queue.

The fake agent treats a prompt as a script only when its first word is a script verb, so a prompt
spelled ``/compact`` just echoes. To let the agent *fail* a compaction, some tests give the memory
surface an extra spelling of the compact command that is also a script verb (``update``, ``ext``,
``hang``): the engine routes the message as a compact command and sends its text, which the agent
then runs as a script.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.engine import wording
from core.engine.surface import Button
from tests.engine.conftest import KEY, ObservingSurface, Relay, RelayFactory, make_surface, until
from tests.fakes.memory_surface import StoredMessage

AGENT_FAILURE = "Something went wrong while talking to the agent"
COMPACTION_FAILED = wording.compaction_status_text("failed")


def spell_compact(surface: ObservingSurface, *words: str) -> ObservingSurface:
    """Let ``words`` (script verbs of the fake agent) also spell the compact command on ``surface``."""
    surface.commands = {**surface.commands, **{w: "compact" for w in words}}
    return surface


def all_text(r: Relay) -> str:
    return "\n".join(r.texts())


def approval_messages(r: Relay) -> list[StoredMessage]:
    return [m for m in r.messages() if m.text.startswith("The agent wants to run")]


def button(message: StoredMessage, label: str) -> Button:
    [found] = [b for b in message.buttons if b.label == label]
    return found


def permission_answers(r: Relay) -> list[Any]:
    """The relay's answers to session/request_permission, as the agent received them."""
    return [f["result"]["outcome"] for f in r.frames()
            if "method" not in f and isinstance(f.get("result"), dict) and "outcome" in f["result"]]


# -- /compact ------------------------------------------------------------------------------------


FAILED_UPDATE = '{"sessionUpdate":"compaction_update","status":"failed"}'


async def test_a_compaction_the_agent_reports_failed_is_not_reported_done(relay: RelayFactory) -> None:
    r = await relay("--on-compact", f"update {FAILED_UPDATE}")
    failed = await r.ask("/compact")
    assert r.prompts()[-1] == "/compact"
    assert COMPACTION_FAILED in failed.text, "the failure is shown"
    assert wording.COMPACTED not in failed.text, "a failed compaction is never reported done"


async def test_a_kiro_compaction_failure_notification_is_not_reported_done(relay: RelayFactory) -> None:
    r = await relay("--on-compact", "text compacting\nstop end_turn")
    await r.ask("hello")  # the session exists; the extension notification names it
    sid = r.session_id()
    assert sid
    params = json.dumps({"sessionId": sid, "status": "failed"})
    await r.restart(flags=("--on-compact", f"ext _kiro.dev/compaction/status {params}"))
    failed = await r.ask("/compact")
    assert COMPACTION_FAILED in failed.text
    assert wording.COMPACTED not in failed.text
    assert wording.COMPACTED not in all_text(r)


async def test_a_compaction_stopped_while_it_runs_is_not_reported_done(relay: RelayFactory) -> None:
    r = await relay("--on-compact", "text compacting now\nhang")
    msg = await r.send("/compact")
    await until(lambda: r.replies_to(msg) and "compacting now" in r.reply_to(msg).text, what="the compact runs")
    await r.send("/stop")
    await r.idle()
    reply = r.reply_to(msg)
    assert wording.STOPPED in reply.text
    assert wording.COMPACTED not in all_text(r), "a stopped compaction is never reported done"


async def test_every_spelling_of_compact_reaches_the_agent_as_the_text_compact(relay: RelayFactory) -> None:
    r = await relay(surface=spell_compact(make_surface(), "!compact"))
    for spelling in ("!compact", "/COMPACT", "/compact@relay_bot"):
        await r.ask(spelling)
    assert r.prompts() == ["/compact", "/compact", "/compact"]


async def test_a_normal_compact_is_reported_compacted_exactly_once(relay: RelayFactory) -> None:
    r = await relay(surface=spell_compact(make_surface(), "update"))
    await r.ask("text hello")
    reply = await r.ask("/compact")
    assert r.prompts()[-1] == "/compact"
    assert reply.text.count(wording.COMPACTED) == 1
    assert all_text(r).count(wording.COMPACTED) == 1, "shown once in the whole chat"

    # the agent reports completion itself as well: still one line, not two
    agent_done = await r.ask('update {"sessionUpdate":"compaction_update","status":"completed"}')
    assert agent_done.text.count(wording.COMPACTED) == 1
    assert all_text(r).count(wording.COMPACTED) == 2, "one per compact command"


# -- an approval the platform will not show ------------------------------------------------------


async def test_an_approval_request_that_cannot_be_shown_cancels_the_tool_call_and_says_so(
        relay: RelayFactory) -> None:
    surface = make_surface()
    surface.refuse = lambda text: text.startswith("The agent wants to run")  # every try of the prompt
    r = await relay(surface=surface)
    msg = await r.send("tool t1 execute rm -rf build\npermission t1\ntext after the tool")
    await r.idle()

    attempts = [c for c in surface.calls if c[0] == "send" and c[2].startswith("The agent wants to run")]
    assert attempts, "the relay did try to show the approval request"
    assert not approval_messages(r), "the platform never showed it"
    reply = r.answer(msg)
    assert "permission:cancelled:-" in reply, "the agent was told the tool call is cancelled"
    assert permission_answers(r) == [{"outcome": "cancelled"}]
    assert "after the tool" in reply, "the turn went on and finished"
    assert wording.APPROVAL_NOT_SHOWN in reply
    assert AGENT_FAILURE not in all_text(r), "the platform's failure is not blamed on the agent"
    assert r.store.unfinished_inbound() == []


# -- the outbound ledger ---------------------------------------------------------------------------

ALPHA = " ".join(["alpha"] * 17)  # 101 characters: the first piece on its own
OMEGA = " ".join(["omega"] * 10)  # 59 characters: with the footer, the second piece


async def test_the_ledger_keeps_only_the_piece_that_did_not_arrive(relay: RelayFactory) -> None:
    surface = make_surface(max_message_length=130)
    surface.refuse = lambda text: "omega" in text  # every send and edit of the second piece fails
    r = await relay(surface=surface)
    answer = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"{ALPHA}\n\n{OMEGA}"}}
    msg = await r.send(f"update {json.dumps(answer)}")
    await until(lambda: r.store.pending_outbound(), what="the undelivered piece in the ledger")
    await r.idle()

    [first] = r.replies_to(msg)
    assert first.text == ALPHA, "the first piece arrived on its own"
    [pending] = r.store.pending_outbound()
    assert pending.conversation_key == KEY
    assert OMEGA in pending.payload["text"], "the second piece is kept"
    assert "alpha" not in pending.payload["text"], "what already arrived is not kept again"

    surface.refuse = lambda text: False
    await until(lambda: not r.store.pending_outbound(), what="the ledger drained")
    assert len(r.with_text("alpha")) == 1, "the first piece appears exactly once"
    assert len(r.with_text(OMEGA)) == 1, "the second piece arrived once"
    assert len(r.with_text("The agent answered, but this chat")) == 1, "told once (split at this small limit)"


# -- secrets ---------------------------------------------------------------------------------------

GITHUB_TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
ANTHROPIC_KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx"
SECRET_PARTS = ("16C7e42F292c6912E7710c838347Ae178B4a", "AbCdEfGhIjKlMnOpQrStUvWx")


async def test_secrets_in_tool_titles_and_streamed_text_never_reach_the_chat(relay: RelayFactory) -> None:
    surface = make_surface()
    offered: list[str] = []  # every text the relay handed the platform, refused or not
    surface.observers.append(lambda method, key, text: offered.append(text))
    r = await relay(surface=surface)
    script = "\n".join([
        f"tool t1 execute curl -H 'Authorization: Bearer {ANTHROPIC_KEY}' https://api.example --token {GITHUB_TOKEN}",
        "permission t1",
        f"tool_update t1 completed pushed with {GITHUB_TOKEN}",
        f"text the token is {GITHUB_TOKEN} and the header is Bearer {ANTHROPIC_KEY}",
    ])
    msg = await r.send(script)
    approval = await until_approval(r)
    await r.press(button(approval, "Allow once").token)
    await r.idle()
    await until(lambda: "Allowed once" in approval_messages(r)[0].text, what="the approval settled")

    assert "permission:selected:allow-once" in r.answer(msg)
    assert "[redacted]" in approval_messages(r)[0].text, "the approval prompt shows the title, scrubbed"
    assert "[redacted]" in r.answer(msg)
    shown = [m.text for m in surface.messages.values()] + [m.rendered for m in surface.messages.values()]
    for part in SECRET_PARTS:
        assert not [t for t in offered if part in t], f"a secret was handed to the platform: {part}"
        assert not [t for t in shown if part in t], f"a secret is shown in the chat: {part}"


async def until_approval(r: Relay) -> StoredMessage:
    await until(lambda: approval_messages(r), what="the approval request")
    return approval_messages(r)[0]


# -- a surface raising something other than a DeliveryError -----------------------------------------


class ResettingSurface(ObservingSurface):
    """Raises ``ConnectionResetError`` (not a DeliveryError) for the final state of one answer
    while ``broken`` is set; the final state is the one carrying the footer."""

    def __init__(self, marker: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.marker = marker
        self.broken = True
        self.resets = 0

    def _gate(self, method: str, key: str, text: str) -> None:
        if self.broken and self.marker in text and "⏱" in text:
            self.resets += 1
            raise ConnectionResetError(104, "Connection reset by peer")
        super()._gate(method, key, text)


def resetting_surface(marker: str) -> ResettingSurface:
    base = make_surface()
    return ResettingSurface(marker, capabilities=base.capabilities)


async def test_a_surface_raising_a_non_delivery_error_does_not_stall_the_queue(relay: RelayFactory) -> None:
    surface = resetting_surface("first answer")
    r = await relay(surface=surface)
    first = await r.send("text first answer\nsleep 0.2")
    await until(lambda: r.replies_to(first) and "first answer" in r.reply_to(first).text, what="first streams")
    second = await r.send("text second answer")  # queued behind the first

    await until(lambda: r.replies_to(second) and "second answer" in r.reply_to(second).text
                and "⏱" in r.reply_to(second).text, what="the queued message is answered")
    await r.idle()
    assert surface.resets >= 1, "the surface did raise on the first answer's final state"
    kept = [p.payload["text"] for p in r.store.pending_outbound()]
    assert [t for t in kept if "first answer" in t], f"the first answer is kept in the ledger: {kept}"
    assert wording.delivery_failure_text() in r.texts(), "told as a delivery failure"
    assert AGENT_FAILURE not in all_text(r)
    assert r.store.unfinished_inbound() == []


async def test_an_answer_a_surface_bug_kept_is_tried_once_then_redelivered_after_a_restart(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    surface = resetting_surface("first answer")
    r = await relay(surface=surface)
    await r.ask("text first answer")
    await until(lambda: r.store.pending_outbound(), what="the answer in the ledger")
    await until(lambda: not r.engine.outbox.redelivering, what="the redelivery gave up on it")
    assert surface.resets == 2, "the turn's delivery and one resend: a bug is not retried again and again"
    logged = [rec for rec in caplog.records if "kept for the next start" in rec.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info, "logged once, with its traceback"
    assert r.store.pending_outbound(), "the answer is still kept"

    surface.broken = False  # the bug is fixed, the relay restarted
    await r.restart()
    await until(lambda: not r.store.pending_outbound(), what="the ledger drained after the restart")
    assert len([m for m in r.with_text("first answer") if "⏱" in m.text]) == 1
