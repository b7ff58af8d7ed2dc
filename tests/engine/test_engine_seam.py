"""The seam as a chat platform needs it: lifecycle, replies that know their origin, commands for
other bots, permanent delivery refusals, the typing indicator, and conversations evicted from memory."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import pytest

from core.engine import wording
from core.engine.surface import DeliveryRefused
from tests.engine.conftest import KEY, ObservingSurface, RelayFactory, make_surface, until

# -- lifecycle -----------------------------------------------------------------------------------


async def test_a_message_before_start_is_journaled_and_answered_once_after_the_replay(
        relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text before the restart")
    await r.close()
    await r.build()  # a polling surface starts receiving inside launch(), before engine.start()
    early = await r.send("text arrived before start")
    await asyncio.sleep(0.2)
    assert r.prompts() == ["text before the restart"], "nothing reaches the agent before start()"
    await r.engine.start()
    await r.idle()
    assert r.prompts() == ["text before the restart", "text arrived before start"], "answered once"
    assert "arrived before start" in r.answer(early)
    assert r.store.unfinished_inbound() == []


async def test_a_message_while_the_engine_closes_is_journaled_and_answered_after_the_next_start(
        relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text first")
    closing = asyncio.create_task(r.engine.close())
    await asyncio.sleep(0)  # close() has begun
    late = await r.send("text during the shutdown")
    await closing
    assert r.prompts() == ["text first"], "no turn starts once close() has begun"
    assert [u.message.message_id for u in r.engine.journal.unfinished()] == [late.message_id]
    await r.restart()
    await r.idle()
    assert r.prompts() == ["text first", "text during the shutdown"]
    assert "during the shutdown" in r.answer(late)


# -- replies that know their origin --------------------------------------------------------------


async def test_status_and_help_answer_the_command_privately_and_reset_answers_it_publicly(
        relay: RelayFactory) -> None:
    r = await relay()
    status, helped, reset = await r.send("/status"), await r.send("/help"), await r.send("/new")
    by_origin = {m.origin: m for m in r.messages() if m.origin}
    assert by_origin[status.message_id].private and by_origin[status.message_id].text.startswith("Agent:")
    assert by_origin[helped.message_id].private and "`/new`" in by_origin[helped.message_id].text
    assert not by_origin[reset.message_id].private
    assert by_origin[reset.message_id].text == wording.NEW_CONVERSATION


async def test_a_stranger_is_refused_once_privately_in_reply_to_their_message(relay: RelayFactory) -> None:
    r = await relay()
    first = await r.send("text let me in", user="stranger")
    await r.send("text please", user="stranger")
    (refusal,) = r.messages()
    assert refusal.origin == first.message_id and refusal.private
    assert refusal.text == wording.unauthorised_text("stranger")
    assert r.prompts() == []


async def test_a_command_addressed_to_another_bot_is_neither_a_command_nor_a_prompt(relay: RelayFactory) -> None:
    surface = make_surface()
    surface.bot_usernames = frozenset({"relay_bot"})
    r = await relay(surface=surface)
    await r.send("text working\nhang")
    # the agent has the prompt (a stop before that finds no session to cancel yet)
    await until(lambda: r.prompts() == ["text working\nhang"], what="the agent is in the turn")
    await r.send("/stop@OtherBot")
    await asyncio.sleep(0.2)
    assert r.conv().busy, "another bot's /stop does not stop this one"
    assert "session/cancel" not in r.methods()
    await r.send("/status@OtherBot")
    assert not [m for m in r.messages() if m.origin], "nor is it answered"
    await r.send("/stop@Relay_Bot")
    await r.idle()
    assert "session/cancel" in r.methods(), "this bot's own /stop@name stops it"
    assert r.prompts() == ["text working\nhang"], "neither reached the agent as a prompt"


async def test_the_model_command_lists_models_as_buttons_and_a_tap_switches_once(relay: RelayFactory) -> None:
    r = await relay("--models", "alpha,beta")
    listing = await r.send("/model")
    (offer,) = [m for m in r.messages() if m.buttons]
    assert offer.origin == listing.message_id
    assert [b.label for b in offer.buttons] == ["alpha", "beta"]
    beta = next(b for b in offer.buttons if b.label == "beta")
    result = await r.press(beta.token)
    assert (result.outcome, result.text) == ("resolved", wording.model_switched_text("beta"))
    assert r.engine.status(KEY).model == "beta"
    assert not offer.buttons and offer.text == wording.model_switched_text("beta"), "the list shows the choice"
    assert (await r.press(beta.token)).outcome == "expired", "a list's buttons work once"


async def test_an_origin_comes_back_with_its_reply_and_a_message_replayed_after_a_restart_has_none(
        relay: RelayFactory) -> None:
    surface = make_surface(can_stream_natively=True)
    r = await relay(surface=surface)
    handle = object()  # the surface's own handle: opaque to the core, and no JSON could hold it
    status = dataclasses.replace(r.message("/status"), origin=handle)
    await r.engine.handle_message(status)
    await r.idle()
    assert ("reply", handle) in surface.origins
    asked = dataclasses.replace(r.message("text first\nsleep 0.3\ntext  second"), origin=handle)
    await r.engine.handle_message(asked)
    await r.idle()
    assert {m for m, o in surface.origins if o is handle} == {"reply", "capabilities_for", "stream", "typing"}
    slow = dataclasses.replace(r.message("text begun\nsleep 2\ntext  ended"), origin=handle)
    await r.engine.handle_message(slow)
    # A native stream is not a message yet: waiting for "begun" among the messages waited for the end
    # of the answer, and the restart below interrupted nothing.
    await until(lambda: any("begun" in t for s in surface.streams.values() for t in s.texts),
                what="the answer has begun")
    await r.close()  # the interrupted turn, as it ends, clears its indicator: with its own origin
    seen = len(surface.origins)
    await r.start()  # journaled without its origin: the replayed message comes without one
    await r.idle()
    assert "ended" in r.answer(slow)
    assert surface.origins[seen:] == [], "the replayed message's reply had no origin to hand back"


# -- delivery ------------------------------------------------------------------------------------


class GoneSurface(ObservingSurface):
    """A chat the bot was removed from: every send is refused for good."""

    def _gate(self, method: str, key: str, text: str) -> None:
        self.calls.append((method, key, text))
        raise DeliveryRefused("Forbidden: bot was kicked from the group chat")


async def test_a_chat_that_refuses_for_good_is_logged_once_and_nothing_is_kept_or_retried(
        relay: RelayFactory, caplog: pytest.LogCaptureFixture) -> None:
    surface = GoneSurface(capabilities=make_surface().capabilities)
    r = await relay(surface=surface)
    await r.send("text an answer nobody will see")
    await r.idle()
    sends = [c for c in surface.calls if c[0] == "send"]
    assert len(sends) == 1, f"a refusal for good is not retried: {sends}"
    assert r.store.pending_outbound() == [], "nothing is kept for a chat that will never take it"
    dropped = [rec for rec in caplog.records if "will not take messages" in rec.getMessage()]
    assert len(dropped) == 1 and dropped[0].levelno == logging.WARNING


async def test_the_typing_indicator_is_refreshed_while_a_turn_runs_and_cleared_on_every_path(
        relay: RelayFactory) -> None:
    surface = make_surface(typing_refresh_s=0.05)
    r = await relay(surface=surface)

    def typing() -> list[str]:
        return [c[2] for c in surface.calls if c[0] == "typing"]

    await r.ask("text slow\nsleep 0.4\ntext done")
    assert typing().count("True") >= 3 and typing()[-1] == "False", typing()
    methods = [c[0] for c in surface.calls]
    final = max(i for i, c in enumerate(surface.calls)
                if (c[0] == "send" and "⏱" in c[2]) or (c[0] == "edit" and "⏱" in c[3]))
    assert methods.index("typing", final) > final, "shown until the final answer is out, then cleared"
    assert "True" not in [c[2] for c in surface.calls[final:] if c[0] == "typing"], "not refreshed after it"

    surface.calls.clear()
    await r.ask("sleep 0.5\nerror -32603 Internal error: something broke")  # silent long enough to show it
    assert typing()[0] == "True" and typing()[-1] == "False", "cleared when the turn fails"

    surface.calls.clear()
    await r.send("sleep 0.5\ntext going\nhang")
    await until(lambda: surface.typing_active.get(KEY), what="the indicator shows while the agent is silent")
    await r.send("/stop")
    await r.idle()
    assert typing()[-1] == "False", f"cleared when the turn is stopped: {surface.calls}"
    assert not surface.typing_active[KEY]


# -- memory --------------------------------------------------------------------------------------


async def test_idle_conversations_leave_memory_and_come_back_from_the_store(relay: RelayFactory) -> None:
    r = await relay()
    r.engine.conversations_in_memory = 2
    for i in range(5):
        await r.ask(f"usage {10 * (i + 1)} 100\ntext conversation {i}", key=f"memory:c{i}")
    assert len(r.engine.conversations) <= 3, "idle conversations are evicted"
    assert "memory:c0" not in r.engine.conversations
    status = r.engine.status("memory:c0")
    assert status.context_pct == 10.0 and status.session_id, "its state stays in the store"
    before = r.methods().count("session/new")
    await r.ask("text again", key="memory:c0")
    assert r.methods().count("session/new") == before, "it continues on the same ACP session"

